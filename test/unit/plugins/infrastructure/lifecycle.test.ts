import { spawn } from 'node:child_process'
import { pathToFileURL } from 'node:url'
import t from 'tap'
import { ROOT } from '../../../../lib/root.js'

// closeGracefully (plugins/infrastructure/lifecycle.ts) in a process of its own, around a bare Fastify app whose
// onClose hook says when it ran: what ends the process, with which exit code, and whether the app was closed first.
const SCRIPT = `
import Fastify from 'fastify'
import { closeGracefully } from ${JSON.stringify(pathToFileURL(`${ROOT}/plugins/infrastructure/lifecycle.ts`).href)}
const mode = process.env.MODE
const app = Fastify({ logger: true })
app.addHook('onClose', async () => {
  console.log('closed')
  if (mode === 'hang') await new Promise(() => {})
})
await app.ready()
closeGracefully(app, mode === 'hang' ? 200 : 5_000, signal => console.log('begin ' + signal))
setInterval(() => {}, 1_000)
console.log('ready')
if (mode === 'throw') setTimeout(() => { throw new Error('boom') }, 10)
if (mode === 'reject') setTimeout(() => { Promise.reject(new Error('boom')) }, 10)
`

interface Ended { code: number | null, signal: NodeJS.Signals | null, out: string }

function run (mode: string, signals: NodeJS.Signals[] = []): Promise<Ended> {
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', SCRIPT], {
    cwd: ROOT,
    env: { ...process.env, MODE: mode },
    stdio: ['ignore', 'pipe', 'inherit']
  })
  let out = ''
  child.stdout.on('data', d => {
    const first = !out.includes('ready\n')
    out += d
    if (first && out.includes('ready\n')) for (const signal of signals) child.kill(signal)
  })
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000)
  return new Promise(resolve => child.on('exit', (code, signal) => {
    clearTimeout(timer)
    resolve({ code, signal, out })
  }))
}

const messages = (out: string): string[] =>
  out.split('\n').filter(l => l.startsWith('{')).map(l => (JSON.parse(l) as { msg: string }).msg)

t.test('SIGTERM and SIGINT: the drain begins, the app closes, exit 0', async t => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    const ended = await run('idle', [signal])
    t.equal(ended.code, 0, signal)
    t.match(ended.out, new RegExp(`begin ${signal}\n(.*\n)*closed\n`), `${signal}: drain first, then close`)
    t.ok(messages(ended.out).includes('shutting down'))
  }
})

t.test('an uncaught exception or rejection: logged, the app closes, exit 1', async t => {
  for (const mode of ['throw', 'reject']) {
    const ended = await run(mode)
    t.equal(ended.code, 1, mode)
    t.match(ended.out, /begin undefined\n(.*\n)*closed\n/, `${mode}: no signal, then close`)
    t.ok(messages(ended.out).includes('uncaught error; shutting down'))
  }
})

t.test('a close that outlasts the grace: exit 1', async t => {
  const ended = await run('hang', ['SIGTERM'])
  t.equal(ended.code, 1)
  t.ok(messages(ended.out).includes('shutdown took too long; exiting'))
})

t.test('other signals keep Node\'s default: the process ends at once, nothing closed', async t => {
  const ended = await run('idle', ['SIGHUP'])
  t.equal(ended.signal, 'SIGHUP')
  t.notMatch(ended.out, /closed/)
})
