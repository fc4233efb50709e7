import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { App } from '../../plugins/apps.js'
import { errors } from '../../plugins/errors.js'
import { ApiKeyState, AppListing, ClientIdParams, CreatedApp, NewAppBody } from '../../schemas/apps.js'
import { errorResponses } from '../../schemas/errors.js'

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
  const tags = ['internal: apps']

  app.post(
    '/apps',
    {
      schema: { tags, body: NewAppBody, response: { 201: CreatedApp, ...errorResponses(400, 401, 409, 413, 415, 503) } }
    },
    async (request, reply) => {
      const { slug, name, redirect_uris: redirectUris, scopes, publisher, website_url: websiteUrl } = request.body
      const created = await app.apps.register(request.sessionUser!.sub,
        { slug, name, redirectUris, scopes, publisher, websiteUrl })
      return reply.code(201).send({ ...view(created.app), client_secret: created.clientSecret })
    }
  )

  app.get('/apps', { schema: { tags, response: { 200: AppListing, ...errorResponses(401, 503) } } }, async request => {
    const owned = await app.apps.listOwnedBy(request.sessionUser!.sub)
    return { apps: owned.map(a => ({ ...view(a), api_key_enabled: a.apiKeyEnabled })) }
  })

  for (const action of ['disable', 'enable'] as const) {
    app.post(
      `/apps/:clientId/api-key/${action}`,
      {
        schema: { tags, params: ClientIdParams, response: { 200: ApiKeyState, ...errorResponses(401, 404, 503) } }
      },
      async request => {
        const changed = await app.apps.setKeyEnabled(
          request.sessionUser!.sub,
          request.params.clientId,
          action === 'enable'
        )
        if (!changed) throw errors.notFound('No such app among yours.')
        return { client_id: changed.clientId, api_key_enabled: changed.apiKeyEnabled }
      }
    )
  }
}

export default apps
