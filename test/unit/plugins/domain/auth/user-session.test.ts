import Fastify from 'fastify'
import cookie from '@fastify/cookie'
import fp from 'fastify-plugin'
import t from 'tap'
import userSessions, { signUserSession } from '../../../../../plugins/domain/auth/user-session.js'
import { ApiError } from '../../../../../plugins/infrastructure/errors.js'

const SECRET = 'user-session-secret-for-the-unit-tests-0123456789'
const token = signUserSession(SECRET, { sub: 'u1', orgRefId: 'o1', entityRefIds: ['e1'] })

// The session plugin as app.ts registers it, after @fastify/cookie, on a bare Fastify: no database.
const app = Fastify()
const config = fp(async app => { app.decorate('config', { userSessionSecret: SECRET } as never) }, { name: 'config' })
await app.register(config)
await app.register(cookie)
await app.register(userSessions)
app.get('/who', async request => {
  try {
    return { sub: app.userSessions.authenticate(request).sub }
  } catch (err) {
    return { error: (err as ApiError).message }
  }
})
t.teardown(() => app.close())

const who = async (headers: Record<string, string>) =>
  (await app.inject({ method: 'GET', url: '/who', headers })).json()

t.test('the session cookie, alone or among others, the first of its name', async t => {
  for (const cookie of [
    `session=${token}`,
    `other=1; session=${token}`,
    ` session = ${token} ;other=2`,
    `session=${token}; session=not-a-token`,
    `session=${token.replace(/\./g, '%2E')}`
  ]) {
    t.same(await who({ cookie }), { sub: 'u1' }, cookie)
  }
  t.same(await who({ authorization: `Bearer ${token}`, cookie: 'session=not-a-token' }), { sub: 'u1' },
    'the Authorization header first')
})

t.test('missing, empty, malformed or quoted: the catalog errors', async t => {
  for (const cookie of ['', 'other=1', 'session=', '=; ;;session', `xsession=${token}`]) {
    t.same(await who(cookie ? { cookie } : {}), { error: 'Missing user session.' }, JSON.stringify(cookie))
  }
  for (const cookie of ['session=%E0%A4%A', 'session=%', 'session=a.b.c', `session="${token}"`,
    `session=not-a-token; session=${token}`]) {
    t.same(await who({ cookie }), { error: 'Invalid or expired user session.' }, cookie)
  }
})
