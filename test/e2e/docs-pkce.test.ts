// The README walkthrough's PKCE steps, as written, for one verifier per possible first character
// (test/support/docs.ts runs them as a reader would).
import { randomBytes } from 'node:crypto'
import { mkdtempSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { atBase, bash, service, steps, walkthrough, workDir } from '../support/docs.js'

// 64 rounds of four `node` processes and two requests: a bound for a loaded machine, beside other files.
t.setTimeout(300_000)

/**
 * Steps 3 and 4 (consent with PKCE, then the exchange) for 64 verifiers, one for each character a base64url
 * verifier can start with: one random verifier in 64 starts with `-`, which node read as an option before the README
 * said `--`. The one change: the verifier is chosen here instead of drawn at random.
 */
t.test('the walkthrough\'s PKCE steps hold for verifiers starting with any character', async t => {
  const dir = workDir(t)
  const { base } = await service(t, dir, 'npm start')
  const verifierLine = 'VERIFIER=$(node -e \'console.log(require("crypto").randomBytes(32).toString("base64url"))\')\n'
  t.ok(walkthrough.includes(verifierLine), 'the walkthrough draws its verifier as the test assumes')
  const setup = await bash(atBase(walkthrough.slice(0, walkthrough.indexOf('# 3.')), base) +
    'printf "%s\\n" "$USER_TOKEN" "$CLIENT_ID" "$CLIENT_SECRET"\n', dir)
  const [userToken, clientId, clientSecret] = setup.stdout.trim().split('\n').slice(-3)
  t.match(clientId, /^app_/, 'steps 1 and 2 registered the app')

  const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
  const verifiers = [...ALPHABET].map(first => first + randomBytes(32).toString('base64url').slice(1))
  const consentAndExchange = steps(walkthrough, 3, 5).replace(verifierLine, 'VERIFIER=$V\n')
  // Four shells at once, each in a folder of its own (step 4 writes tokens.json).
  const chunks = [0, 1, 2, 3].map(k => verifiers.filter((_, i) => i % 4 === k))
  const runs = await Promise.all(chunks.map(chunk => {
    const folder = mkdtempSync(join(dir, 'pkce-'))
    const script = `BASE=${base}\nUSER_TOKEN=${userToken}\nCLIENT_ID=${clientId}\nCLIENT_SECRET=${clientSecret}\n` +
      `for V in ${chunk.join(' ')}; do\n${consentAndExchange}echo "RESULT $V $ACCESS_TOKEN"\ndone\n`
    return bash(script, folder, {}, 240_000)
  }))
  const results = new Map(runs.flatMap(r => r.stdout.split('\n'))
    .filter(l => l.startsWith('RESULT '))
    .map(l => l.split(' ').slice(1) as [string, string]))
  const failed = verifiers.filter(v => !/^eyJ/.test(results.get(v) ?? ''))
  t.same(failed, [], 'every verifier got an access token')
  t.equal(results.size, 64, '64 verifiers ran')
  t.same(new Set(verifiers.map(v => v[0])).size, 64, 'every first character, - and _ included')
})
