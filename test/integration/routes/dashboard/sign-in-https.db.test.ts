// The session cookie a sign-in link sets is Secure when the service is reached over https.
import t from 'tap'
import { build, unique } from '../../../support/helper.js'

const app = await build(t, { PUBLIC_BASE_URL: 'https://gateway.example' })

t.test('Secure on an https base URL', async t => {
  const link = new URL(app.signInLinks.issue({ sub: unique('dev'), orgRefId: unique('org'), entityRefIds: [] }))
  t.equal(link.origin, 'https://gateway.example')
  const res = await app.inject({ method: 'GET', url: link.pathname + link.search })
  t.equal(res.statusCode, 303)
  t.match(res.cookies.find(c => c.name === 'session'), { secure: true, httpOnly: true, sameSite: 'Lax', path: '/' })
})
