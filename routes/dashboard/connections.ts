import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { errors } from '../../plugins/infrastructure/errors.js'
import { connectionsMain } from '../../views/connections.js'
import type { DashboardRouteOptions } from './developer.js'

const schema = { hide: true }

/** The pages and actions of organisation users: the apps connected to their entities, and Uninstall. */
const connectionPages: FastifyPluginAsyncTypebox<DashboardRouteOptions> = async (app, { kit, action }) => {
  const { sendPage, requirePageUser, formToken, redirectWithNotice, title } = kit

  app.get('/connections', { schema, onRequest: requirePageUser }, async (request, reply) => {
    const user = request.sessionUser!
    const connections = await app.installs.listActiveIn(user.orgRefId, user.entityRefIds)
    return sendPage(request, reply, {
      title: title('Connected apps'),
      current: 'connections',
      main: connectionsMain(user.orgRefId, user.entityRefIds, connections, formToken(request, reply, user))
    })
  })

  app.post('/connections/:installId/uninstall', {
    schema: {
      ...schema,
      params: Type.Object({ installId: Type.String({ minLength: 1 }) }),
      body: Type.Object({ _csrf: Type.Optional(Type.String()) })
    },
    ...action
  }, async (request, reply) => {
    const user = request.sessionUser!
    // Only an install of the user's own entities: another entity of the org is as unknown as another org's.
    const found = await app.installs.find(request.params.installId)
    if (!found || found.orgRefId !== user.orgRefId || !user.entityRefIds.includes(found.entityRefId)) {
      throw errors.installNotFound()
    }
    const removed = await app.installs.uninstall(user.orgRefId, found.installId)
    if (!removed) throw errors.installNotFound()
    return redirectWithNotice(reply, '/dashboard/connections', ['uninstalled', found.appName, found.entityRefId])
  })
}

export default connectionPages
