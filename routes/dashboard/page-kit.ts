import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { isCrossSite } from '../../lib/same-origin.js'
import { SIGN_IN_PATH } from '../../plugins/domain/auth/sign-in-links.js'
import type { SessionUser } from '../../plugins/domain/auth/user-session.js'
import { errors } from '../../plugins/infrastructure/errors.js'
import { layout, pageTitle, type PageOptions } from '../../views/layout.js'
import { encodeNotice, noticeText, type Notice } from '../../views/notices.js'

/** The headers of every dashboard answer (the stylesheet and the icon replace the caching and the type). */
export const PAGE_HEADERS = {
  'content-security-policy': "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; " +
    "frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store'
}
const HTML_TYPE = 'text/html; charset=utf-8'
const NOTICE_COOKIE = 'notice'

/** A page as a handler describes it: the layout's options without the header's user, which the kit adds. */
export type Page = Omit<PageOptions, 'user' | 'notice'>

/**
 * What every page and action of the dashboard shares: who is signed in, the form token of their session, the
 * one-time notice, and the checks an action passes before it changes anything.
 */
export function createPageKit (app: FastifyInstance, o: { ownOrigin: string, secure: boolean }) {
  const tokens = new WeakMap<FastifyRequest, string>()

  function sessionOf (request: FastifyRequest): SessionUser | undefined {
    try {
      return app.userSessions.authenticate(request)
    } catch {
      return undefined
    }
  }

  /** The form token of the signed-in user's session: one per page, shared by all of the page's forms. */
  function formToken (request: FastifyRequest, reply: FastifyReply, user: SessionUser): string {
    let token = tokens.get(request)
    if (token === undefined) {
      token = reply.generateCsrf({ userInfo: user.sub })
      tokens.set(request, token)
    }
    return token
  }

  return {
    sessionOf,
    formToken,

    /** Sends a page in the layout, with the notice an action left (said once) and the user's header. */
    sendPage (request: FastifyRequest, reply: FastifyReply, page: Page, status = 200) {
      const user = request.sessionUser ?? sessionOf(request)
      const header = user && { sub: user.sub, csrfToken: formToken(request, reply, user) }
      const noticeCookie = request.cookies[NOTICE_COOKIE]
      const notice = noticeText(noticeCookie)
      if (noticeCookie !== undefined) reply.clearCookie(NOTICE_COOKIE, { path: '/dashboard' })
      return reply.code(status).headers(PAGE_HEADERS).type(HTML_TYPE)
        .send(layout({ ...page, user: header, notice }).toString())
    },

    /** The 303 after an action: back to a page of the dashboard, which says `notice` once. */
    redirectWithNotice (reply: FastifyReply, location: string, notice: Notice) {
      reply.setCookie(NOTICE_COOKIE, encodeNotice(notice), {
        path: '/dashboard', httpOnly: true, sameSite: 'strict', secure: o.secure, maxAge: 60
      })
      return reply.redirect(location, 303)
    },

    /** onRequest of a page: without a signed-in user, the browser goes to the sign-in page. */
    async requirePageUser (request: FastifyRequest, reply: FastifyReply): Promise<void> {
      const user = sessionOf(request)
      if (!user) return reply.redirect(SIGN_IN_PATH, 303)
      request.sessionUser = user
    },

    /**
     * onRequest of an action: a signed-in user and a request from this service's own pages; the form's token is
     * checked next (preHandler, after the body is read). Each refusal is a 403 page and changes nothing.
     */
    async requireActionUser (request: FastifyRequest): Promise<void> {
      const user = sessionOf(request)
      if (!user) throw errors.dashboardSignInRequired()
      request.sessionUser = user
      if (isCrossSite(request.headers, o.ownOrigin)) throw errors.crossSiteRequest()
    },

    title: pageTitle
  }
}

export type PageKit = ReturnType<typeof createPageKit>
