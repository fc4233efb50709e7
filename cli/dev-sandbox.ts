import type { AppInstance } from '../app.js'
import type { SessionUser } from '../plugins/domain/auth/user-session.js'
import { WIRED_SCOPES } from '../lib/scopes.js'

/** The development sandbox's app: what the dashboard shows a newcomer in its first minute. */
export const SANDBOX_APP = {
  slug: 'sandbox-app',
  name: 'Sandbox App',
  redirectUris: ['https://example.com/callback'],
  scopes: Object.keys(WIRED_SCOPES)
}

/**
 * On a development start: unless the user already owns an app, registers the sandbox app for them and installs it
 * in their first entity, through the same services as registration and consent, so that the dashboard has an app,
 * an install and a connection to show at once. The app's credentials when it made them (the secret exists only
 * here: the service keeps its hash), else undefined.
 */
export async function ensureDevelopmentSandbox (
  app: AppInstance, user: SessionUser
): Promise<{ clientId: string, clientSecret: string } | undefined> {
  const entity = user.entityRefIds[0]
  if (entity === undefined || await app.apps.ownsAny(user.sub)) return undefined
  let registered
  try {
    registered = await app.apps.register(user.sub, SANDBOX_APP)
  } catch (err) {
    // Someone else registered the slug on this database: the sandbox is theirs to show.
    app.log.warn({ err }, 'the development sandbox app was not registered')
    return undefined
  }
  await app.db.tx(q => app.installs.grant({
    clientId: registered.app.clientId,
    orgRefId: user.orgRefId,
    entityRefId: entity,
    scopes: SANDBOX_APP.scopes,
    userSub: user.sub
  }, q))
  return { clientId: registered.app.clientId, clientSecret: registered.clientSecret }
}
