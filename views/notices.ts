/**
 * The one-time notices an action leaves for the page it returns to: a key and its arguments, carried by a short-lived
 * cookie and said once. Only the texts below can be shown; the arguments are escaped like any text.
 */
export const NOTICES = {
  'key-disabled': (app: string) =>
    `The API key of ${app} is disabled: every access token of the app is refused from now on.`,
  'key-enabled': (app: string) =>
    `The API key of ${app} is enabled: new tokens work; tokens issued before the disable stay refused.`,
  retried: (deliveryId: string) => `Delivery ${deliveryId} is due again and goes out within seconds.`,
  replayed: (n: string, truncated: string) =>
    `${n === '1' ? '1 delivery is' : `${n} deliveries are`} queued again.` +
    (truncated === 'true' ? ' More matched than one recovery sends: recover again to send the rest.' : ''),
  'test-sent': (eventId: string) => `Test event ${eventId} is queued; its attempt shows in the log within seconds.`,
  uninstalled: (app: string, entity: string) =>
    `${app} is uninstalled from ${entity}: its access tokens stopped working and its webhooks stopped.`
} satisfies Record<string, (...args: string[]) => string>

export type NoticeKey = keyof typeof NOTICES
export type Notice = [key: NoticeKey, ...args: string[]]

/** The cookie value of a notice. */
export const encodeNotice = (n: Notice): string => Buffer.from(JSON.stringify(n)).toString('base64url')

/** The text of a notice cookie's value; undefined for anything that is not one of ours. */
export function noticeText (value: string | undefined): string | undefined {
  if (!value) return undefined
  try {
    const parsed: unknown = JSON.parse(Buffer.from(value, 'base64url').toString('utf8'))
    if (!Array.isArray(parsed) || !parsed.every(a => typeof a === 'string')) return undefined
    const [key, ...args] = parsed as string[]
    const make = Object.hasOwn(NOTICES, key!) ? (NOTICES[key as NoticeKey] as (...a: string[]) => string) : undefined
    return make?.(...args.map(a => a.slice(0, 200)))
  } catch {
    return undefined
  }
}
