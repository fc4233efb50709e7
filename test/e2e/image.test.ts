/**
 * The container image holds what the service reads at run time. There is no Docker in CI, so the image is laid out
 * as the Dockerfile's final stage copies it, from the build `npm test` makes first, and the service is started from
 * there.
 */
import { spawn } from 'node:child_process'
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { eventually } from '../support/helper.js'
import { untapped } from '../support/processes.js'

t.test('the final stage of the Dockerfile copies every file the service reads', async t => {
  const dockerfile = readFileSync('Dockerfile', 'utf8')
  const finalStage = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '))
  const copied = [...finalStage.matchAll(/^COPY (?!--from)(\S+) (\S+)$/gm)].map(m => m[1]!)
  t.same(copied.sort(), ['docs/webhooks.md', 'migrations', 'views/style.css'],
    'the run-time files copied from the sources')

  const root = mkdtempSync(join(tmpdir(), 'mg-image-'))
  t.teardown(() => rmSync(root, { recursive: true, force: true }))
  for (const path of ['package.json', 'dist', ...copied]) cpSync(path, join(root, path), { recursive: true })
  symlinkSync(join(process.cwd(), 'node_modules'), join(root, 'node_modules'))

  const child = spawn(...untapped(process.execPath, 'dist/cli.js', 'serve'), {
    cwd: root,
    env: {
      ...process.env,
      DATABASE_URL: '',
      DATA_DIR: join(root, 'data'),
      PORT: '0',
      LOG_LEVEL: 'info',
      MCP_ALLOW_ANONYMOUS: 'true'
    },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  t.teardown(() => { child.kill('SIGKILL') })
  let out = ''
  child.stdout.on('data', d => { out += d })
  child.stderr.on('data', d => { out += d })
  const base = await eventually(() => /listening on (http:\/\/\S+)/.exec(out)?.[1], {
    timeout: 90_000, // only a bound on a stuck start: a loaded 2-core machine passed 30 s
    what: 'the banner'
  })

  const rpc = async (body: unknown, session?: string) => fetch(`${base}/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(session ? { 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' } : {})
    },
    body: JSON.stringify(body)
  })
  const init = await rpc({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'tap', version: '1' } }
  })
  t.equal(init.status, 200)
  const session = init.headers.get('mcp-session-id')!
  await init.text()
  const read = await rpc({ jsonrpc: '2.0', id: 2, method: 'resources/read', params: { uri: 'marketplace://docs/webhooks.md' } }, session)
  const text = await read.text()
  t.match(text, 'raw body', 'the guide is served from the image layout')
  t.notMatch(text, root, 'no server path in the answer')

  const css = await fetch(`${base}/dashboard/style.css`)
  t.equal(css.status, 200)
  t.match(await css.text(), /^[\s\S]*\{[\s\S]*\}/, 'the pages\' stylesheet is served from the image layout')
})
