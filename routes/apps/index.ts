import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { App } from '../../plugins/domain/common/clients.js'
import { errors } from '../../plugins/infrastructure/errors.js'
import { ApiKeyState, AppListing, ClientIdParams, CreatedApp, NewAppBody } from '../../schemas/apps.js'
import { BODY_ERRORS, errorResponses, invalid, USER_ERRORS } from '../../schemas/error-responses.js'
import { SAMPLE } from '../../schemas/examples.js'

const view = (a: App) => ({
  client_id: a.clientId,
  app_slug: a.slug,
  name: a.name,
  redirect_uris: a.redirectUris,
  scopes: a.scopes,
  ...(a.publisher === null ? {} : { publisher: a.publisher }),
  ...(a.websiteUrl === null ? {} : { website_url: a.websiteUrl }),
  created_at: a.createdAt.toISOString()
})

/** App registration and API keys: the developer's side of the internal surface (docs/rules.md#apps-and-api-keys). */
const apps: FastifyPluginAsyncTypebox = async app => {
  app.addHook('onRequest', app.userSessions.requireUser)
  const tags = ['apps']
  const security = [{ userSession: [] }]

  app.post(
    '/apps',
    {
      schema: {
        tags,
        security,
        operationId: 'registerApp',
        summary: 'Register an app',
        description: 'The signed-in user becomes its owner. The answer holds the `client_secret`, shown only here. ' +
          'Redirect URIs must be https; scopes are those the app may ask for at consent.',
        body: NewAppBody,
        response: {
          201: CreatedApp,
          ...errorResponses(
            ...USER_ERRORS,
            ...BODY_ERRORS,
            invalid('body', '/slug', 'must match pattern "^[a-z0-9][a-z0-9-]{1,62}$"'),
            errors.unknownScope(['payroll:read']),
            errors.invalidRedirectUri('redirect_uris must be absolute https URLs without a fragment or user info ' +
              '(got "http://acme.example/callback").'),
            errors.conflict(`An app with slug "${SAMPLE.appSlug}" already exists.`)
          )
        }
      }
    },
    async (request, reply) => {
      const { slug, name, redirect_uris: redirectUris, scopes, publisher, website_url: websiteUrl } = request.body
      const created = await app.apps.register(request.sessionUser!.sub,
        { slug, name, redirectUris, scopes, publisher, websiteUrl })
      return reply.code(201).send({ ...view(created.app), client_secret: created.clientSecret })
    }
  )

  app.get('/apps', {
    schema: {
      tags,
      security,
      operationId: 'listApps',
      summary: 'List your apps',
      description: 'The apps the signed-in user registered, with the state of their API keys.',
      response: { 200: AppListing, ...errorResponses(...USER_ERRORS) }
    }
  }, async request => {
    const owned = await app.apps.listOwnedBy(request.sessionUser!.sub)
    return { apps: owned.map(a => ({ ...view(a), api_key_enabled: a.apiKeyEnabled })) }
  })

  for (const action of ['disable', 'enable'] as const) {
    app.post(
      `/apps/:clientId/api-key/${action}`,
      {
        schema: {
          tags,
          security,
          operationId: `${action}ApiKey`,
          summary: action === 'disable' ? "Disable an app's API key" : "Enable an app's API key",
          description: action === 'disable'
            ? 'At once, in every tenant, every token and code the app was issued stops working for good ' +
              '(401 `invalid_client`), and the token endpoint refuses the app until the key is enabled again.'
            : 'The app can get tokens again through a new consent; tokens and codes issued before the disable stay ' +
              'dead (`invalid_grant`).',
          params: ClientIdParams,
          response: { 200: ApiKeyState, ...errorResponses(...USER_ERRORS, errors.appNotFound()) }
        }
      },
      async request => {
        const changed = await app.apps.setKeyEnabled(
          request.sessionUser!.sub,
          request.params.clientId,
          action === 'enable'
        )
        if (!changed) throw errors.appNotFound()
        return { client_id: changed.clientId, api_key_enabled: changed.apiKeyEnabled }
      }
    )
  }
}

export default apps
