import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT } from '../lib/root.js'

/** Where the service serves the one stylesheet (routes/dashboard). */
export const STYLESHEET_PATH = '/dashboard/style.css'

/** views/style.css, read once: the same file runs from the sources and from dist/ (it is not compiled). */
export const STYLESHEET_CSS = readFileSync(join(ROOT, 'views', 'style.css'), 'utf8')

/** A hash of its content: the URL changes with the content, so browsers may keep each version for a long time. */
export const STYLESHEET_VERSION = createHash('sha256').update(STYLESHEET_CSS).digest('base64url').slice(0, 12)

/** What pages link to. */
export const STYLESHEET_HREF = `${STYLESHEET_PATH}?v=${STYLESHEET_VERSION}`
