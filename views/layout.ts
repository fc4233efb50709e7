import { html, type Html } from './html.js'
import { csrfField } from './forms.js'
import { ICON_PATH, STYLESHEET_HREF } from './stylesheet.js'

export const PRODUCT_NAME = 'Marketplace dashboard'

/** The dashboard's sections, in the order the header lists them. */
export const NAV = [
  { key: 'apps', label: 'Apps', href: '/dashboard/apps' },
  { key: 'connections', label: 'Connections', href: '/dashboard/connections' },
  { key: 'event-types', label: 'Event types', href: '/dashboard/event-types' }
] as const
export type Section = (typeof NAV)[number]['key']

/** The signed-in user as the header shows them, with the token their sign-out form needs. */
export interface HeaderUser {
  sub: string
  csrfToken: string
}

export interface PageOptions {
  /** The document title, exactly (dashboard pages end theirs with the product name: `pageTitle`). */
  title: string
  main: Html
  /** The signed-in user: the header then names them and shows the navigation and "Sign out". */
  user?: HeaderUser | undefined
  /** The section the page belongs to, marked in the navigation. */
  current?: Section
  /** Said once, in the status region above the content (a screen reader announces it). */
  notice?: string | undefined
  /** A page of reading width (forms, short messages) rather than the full one (tables). */
  narrow?: boolean
}

function header (user: HeaderUser | undefined, current: Section | undefined): Html {
  const signedIn = user && html`
    <nav aria-label="Dashboard">
      <ul>
        ${NAV.map(n => html`<li><a href="${n.href}"${n.key === current ? html` aria-current="page"` : ''}>${
          n.label}</a></li>`)}
      </ul>
    </nav>
    <div class="user">
      <span>Signed in as <strong>${user.sub}</strong></span>
      <form method="post" action="/dashboard/sign-out">
        ${csrfField(user.csrfToken)}
        <button type="submit">Sign out</button>
      </form>
    </div>`
  return html`<header class="site-header">
  <div class="bar">
    <a class="product" href="/dashboard">${PRODUCT_NAME}</a>${signedIn}
  </div>
</header>`
}

/** A dashboard page's document title. */
export const pageTitle = (title: string): string => `${title} · ${PRODUCT_NAME}`

/** The one page layout: every page of the dashboard and the consent page. */
export function layout (o: PageOptions): Html {
  return html`<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>${o.title}</title>
  <link rel="stylesheet" href="${STYLESHEET_HREF}">
  <link rel="icon" href="${ICON_PATH}" type="image/svg+xml">
</head>
<body>
<a class="skip-link" href="#main">Skip to main content</a>
${header(o.user, o.current)}
<div class="notice" role="status">${o.notice ? html`<p>${o.notice}</p>` : ''}</div>
<main id="main"${o.narrow ? html` class="narrow"` : ''}>
${o.main}
</main>
</body>
</html>
`
}
