import { Writable } from 'node:stream'
import t from 'tap'
import { bearer, build, install } from '../../../support/helper.js'

t.test('no secret reaches the logs during the whole flow', async t => {
  const lines: string[] = []
  const logStream = new Writable({
    write (chunk, _enc, cb) {
      lines.push(chunk.toString())
      cb()
    }
  })
  const app = await build(t, { LOG_LEVEL: 'trace' }, { logStream })

  const i = await install(app)
  const secrets = [i.clientSecret, i.accessToken, i.refreshToken, i.userToken, i.ownerToken]
  const json = { 'content-type': 'application/json' }
  const creds = { client_id: i.clientId, client_secret: i.clientSecret }

  const refreshed = await app.inject({
    method: 'POST',
    url: '/oauth/token',
    headers: json,
    payload: JSON.stringify({ grant_type: 'refresh_token', refresh_token: i.refreshToken, ...creds })
  })
  secrets.push(refreshed.json().access_token, refreshed.json().refresh_token)
  await app.inject({
    method: 'POST',
    url: '/oauth/token',
    headers: json,
    payload: JSON.stringify({
      grant_type: 'refresh_token',
      refresh_token: 'mrt_guess',
      client_id: i.clientId,
      client_secret: 'wrong-secret-value'
    })
  })
  secrets.push('wrong-secret-value')
  await app.inject({ method: 'GET', url: '/public/v1/me', headers: bearer(refreshed.json().access_token) })
  await app.inject({ method: 'GET', url: '/public/v1/me', headers: bearer('forged.token.value') })
  secrets.push('forged.token.value')
  // A code sent where it does not belong, in a query string: the URL is logged, the code is not.
  const authorize = await app.inject({
    method: 'GET',
    url: `/oauth/authorize?client_id=${i.clientId}&code=leaked-code-123&access_token=leaked-token-456`,
    headers: { cookie: `session=${i.userToken}` }
  })
  t.equal(authorize.statusCode, 400)
  secrets.push('leaked-code-123', 'leaked-token-456')
  await app.inject({ method: 'GET', url: '/public/v1/me?access%5Ftoken=encoded-name-789&CODE%3D=upper-case-000' })
  secrets.push('encoded-name-789', 'upper-case-000')
  await app.inject({
    method: 'POST',
    url: '/oauth/revoke',
    headers: json,
    payload: JSON.stringify({ token: refreshed.json().refresh_token, ...creds })
  })

  // The authorization codes themselves, taken from the redirects, must not be logged either.
  const log = lines.join('')
  t.ok(lines.filter(l => l.includes('"msg":"request"')).length >= 9, 'every request was logged')
  t.match(log, /"url":"\/public\/v1\/me"/, 'one line per request, with its URL')
  t.match(log, /"reqId":"[^"]+"/, 'with the request id')
  t.match(log, /code=\[REDACTED\]/)
  for (const secret of secrets) t.notOk(log.includes(secret), `not logged: ${secret.slice(0, 12)}…`)
})
