// Running the documentation's examples as a reader pastes them (test/e2e/docs-examples, test/e2e/docs-pkce).
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT } from '../../lib/root.js'
import { freePort } from './browser.js'
import { eventually, freshDatabase, postgresDatabase, TEST_DATABASE_URL } from './helper.js'
import { untapped } from './processes.js'

export type Test = { teardown (fn: () => unknown): void }

export interface Block { file: string, section: string, lang: string, text: string }

/** The fenced blocks of a Markdown file, each with the heading it sits under. */
export function fencedBlocks (file: string): Block[] {
  const found: Block[] = []
  let section = ''
  let open: { lang: string, lines: string[] } | undefined
  for (const line of readFileSync(join(ROOT, file), 'utf8').split('\n')) {
    if (open) {
      if (line.startsWith('```')) {
        found.push({ file, section, lang: open.lang, text: open.lines.join('\n') + '\n' })
        open = undefined
      } else {
        open.lines.push(line)
      }
    } else if (line.startsWith('```')) {
      open = { lang: line.slice(3).trim(), lines: [] }
    } else if (line.startsWith('#')) {
      section = line.replace(/^#+\s*/, '')
    }
  }
  return found
}

const DOCS = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter(f => f.endsWith('.md')).map(f => `docs/${f}`)]
export const BLOCKS = DOCS.flatMap(fencedBlocks)
export const keyOf = (b: Block): string => {
  const same = BLOCKS.filter(o => o.file === b.file && o.section === b.section)
  return same.length === 1 ? `${b.file} › ${b.section}` : `${b.file} › ${b.section} #${same.indexOf(b) + 1}`
}
export const block = (key: string): string => {
  const found = BLOCKS.find(b => keyOf(b) === key)
  if (!found) throw new Error(`no block ${key} in the docs`)
  return found.text
}

/** The steps of a shell block from the line `# <from>.` up to the line `# <to>.` (or the end). */
export function steps (text: string, from: number, to?: number): string {
  const lines = text.split('\n')
  const start = lines.findIndex(l => l.startsWith(`# ${from}.`))
  const end = to === undefined ? lines.length : lines.findIndex(l => l.startsWith(`# ${to}.`))
  if (start < 0 || end < 0) throw new Error(`steps ${from} to ${to} not found`)
  return lines.slice(start, end).join('\n') + '\n'
}

/**
 * A working folder as a reader's checkout looks from the shell: inside the repository (so `npx marketplace-gateway`
 * finds this package), with `docs/` beside it and its own `./data`. Removed at the end.
 */
export function workDir (t: Test): string {
  const runs = join(ROOT, '.doc-runs')
  mkdirSync(runs, { recursive: true })
  const dir = mkdtempSync(join(runs, 'run-'))
  symlinkSync(join(ROOT, 'docs'), join(dir, 'docs'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

/**
 * A database of its own for each service (each registers `demo-app`): on the tests' Postgres when `postgres` says
 * the recipe needs one, else on the database under test; '' (embedded) when that is the embedded one.
 */
export async function database (t: Test, opts: { postgres?: boolean } = {}): Promise<string> {
  if (opts.postgres) return postgresDatabase(t)
  return TEST_DATABASE_URL ? freshDatabase(t, TEST_DATABASE_URL) : ''
}

export interface Ran { code: number | null, stdout: string, stderr: string }

/** Runs a shell script to its end (at most `timeout` ms; then its whole process group is killed and it fails). */
export function bash (script: string, cwd: string, env: Record<string, string> = {}, timeout = 60_000): Promise<Ran> {
  return new Promise(resolve => {
    const child = spawn(...untapped('bash', '-c', script), {
      cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', d => { stdout += d })
    child.stderr.on('data', d => { stderr += d })
    const timer = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), timeout)
    child.on('exit', code => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })
}

/** Starts a long-running command of the docs (`npm start`, a worker) in the background, stopped at the end. */
export function background (t: Test, command: string, cwd: string, env: Record<string, string>) {
  const child = spawn(...untapped('bash', '-c', command), {
    cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true
  })
  let output = ''
  child.stdout.on('data', d => { output += d })
  child.stderr.on('data', d => { output += d })
  t.teardown(() => { try { process.kill(-child.pid!, 'SIGTERM') } catch {} })
  return { output: () => output }
}

/** The service as the docs start it: `command` in `dir`, on a free port, `./data` of that folder. */
export async function service (t: Test, dir: string, command: string, env: Record<string, string> = {}) {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const databaseUrl = env.DATABASE_URL ?? await database(t)
  const serviceEnv = {
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: join(dir, 'data'),
    DATABASE_URL: databaseUrl,
    LOG_LEVEL: 'warn',
    ...env
  }
  const started = background(t, command, dir, serviceEnv)
  await eventually(() => fetch(`${base}/health/ready`).then(r => r.ok, () => false), {
    timeout: 60_000, what: `${command} to be ready; it said: ${started.output().slice(-500)}`
  })
  return { base, port, env: serviceEnv }
}

/** The README's walkthrough: the one block both test files run. */
export const walkthrough = block('README.md › The whole journey by hand')
/**
 * The one line the test changes in the README's walkthrough: BASE, where the service listens, as the README tells a
 * reader whose service is not on port 3000. Nothing else: the commands that call the service get it from BASE.
 */
export const atBase = (script: string, base: string): string => {
  if (!script.includes('BASE=http://127.0.0.1:3000\n')) throw new Error('the walkthrough no longer sets BASE')
  return script.replace('BASE=http://127.0.0.1:3000\n', `BASE=${base}\n`)
}
