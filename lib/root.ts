import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

// The same code runs from sources (tests) and from dist/ (production), so the package root is found, not assumed.
function findRoot (from: string): string {
  let dir = from
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir)
    if (parent === dir) throw new Error('package.json not found above ' + from)
    dir = parent
  }
  return dir
}

export const ROOT = findRoot(dirname(fileURLToPath(import.meta.url)))
export const VERSION = '0.7.0'
