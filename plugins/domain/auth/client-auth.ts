import fp from 'fastify-plugin'
import type { FastifyRequest } from 'fastify'
import { errors } from '../../infrastructure/errors.js'
import { ClientMetadataError, type App } from '../common/clients.js'

declare module 'fastify' {
  interface FastifyInstance {
    clientAuth: {
      /**
       * RFC 6749 2.3.1: HTTP Basic or client_id/client_secret in the body, never both; or a public client's
       * client_id alone (RFC 6749 2.1, its PKCE is checked by the grant). Throws the catalog error.
       */
      authenticate(request: FastifyRequest): Promise<App>
    }
  }
}

// Basic credentials are form-urlencoded before base64 (RFC 6749 2.3.1).
const formDecode = (s: string): string => decodeURIComponent(s.replace(/\+/g, ' '))

/** Client credentials (an app's API key) at the token and revocation endpoints. */
export default fp(
  async app => {
    async function publicClient (clientId: string): Promise<App> {
      let client: App | undefined
      try {
        // A metadata document is first fetched at the authorization endpoint, by a signed-in user's request; the
        // token endpoint, open to anyone, only keeps known ones fresh, so it cannot be used to make us fetch URLs.
        client = await app.apps.resolve(clientId, { discover: false })
      } catch (err) {
        if (err instanceof ClientMetadataError) throw errors.oauthInvalidClient(err.message)
        throw err
      }
      if (client?.clientType !== 'public') {
        throw errors.oauthInvalidClient(
          'Client authentication is required: HTTP Basic, or client_id and client_secret.'
        )
      }
      if (!client.apiKeyEnabled) throw errors.oauthInvalidClient("The app's API key is disabled.")
      return client
    }

    app.decorate('clientAuth', {
      async authenticate (request: FastifyRequest): Promise<App> {
        const body = (request.body ?? {}) as { client_id?: unknown, client_secret?: unknown }
        const header = request.headers.authorization
        let clientId: string
        let secret: string
        const basic = header !== undefined && /^basic /i.test(header)
        if (basic) {
          if (body.client_secret !== undefined) {
            throw errors.oauthInvalidRequest('Use one client authentication method, not two.')
          }
          const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8')
          const colon = decoded.indexOf(':')
          if (colon < 0) throw errors.oauthInvalidClient('Malformed Basic credentials.', true)
          try {
            clientId = formDecode(decoded.slice(0, colon))
            secret = formDecode(decoded.slice(colon + 1))
          } catch {
            throw errors.oauthInvalidClient('Malformed Basic credentials.', true)
          }
          if (body.client_id !== undefined && body.client_id !== clientId) {
            throw errors.oauthInvalidRequest('client_id in the body differs from the Basic credentials.')
          }
        } else if (typeof body.client_id === 'string' && typeof body.client_secret === 'string') {
          clientId = body.client_id
          secret = body.client_secret
        } else if (typeof body.client_id === 'string' && body.client_secret === undefined) {
          return publicClient(body.client_id)
        } else {
          throw errors.oauthInvalidClient(
            'Client authentication is required: HTTP Basic, or client_id and client_secret.'
          )
        }
        const client = await app.apps.authenticateClient(clientId, secret)
        if (!client) throw errors.oauthInvalidClient('Client authentication failed.', basic)
        if (!client.apiKeyEnabled) throw errors.oauthInvalidClient("The app's API key is disabled.", basic)
        return client
      }
    })
  },
  { name: 'client-auth', dependencies: ['apps'] }
)
