/** The largest request body any route accepts: far above any request of this API, small enough to parse at once. */
export const BODY_LIMIT = 64 * 1024
