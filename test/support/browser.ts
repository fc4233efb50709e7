// Debian's headless Chromium, shared by the test files that drive pages (one browser per test process).
import { existsSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { chromium, type Browser } from 'playwright-core'

const CHROMIUM = '/usr/bin/chromium'
/** The reason page tests are skipped, or false when Chromium is there. */
export const SKIP_WITHOUT_CHROMIUM = existsSync(CHROMIUM)
  ? false
  : 'Debian chromium is not installed (apt-get install chromium)'

let launched: Promise<Browser> | undefined
export const browser = (): Promise<Browser> =>
  (launched ??= chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync'
    ]
  }))
t.teardown(async () => {
  if (launched) await (await launched).close()
})

/** A port that was free a moment ago: the app's public origin must be known before it listens. */
export async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise<void>(resolve => server.close(() => resolve()))
  return port
}
