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

/** The pages' icon: without one, browsers ask for /favicon.ico and log its 404 as an error. */
export const ICON_PATH = '/dashboard/icon.svg'
export const ICON_SVG = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16">' +
  '<rect width="16" height="16" rx="3" fill="#1b2a41"/><path d="M4 11V5l4 4 4-4v6" stroke="#fff" fill="none"/></svg>'
