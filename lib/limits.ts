/** The largest request body any route accepts: far above any request of this API, small enough to parse at once. */
export const BODY_LIMIT = 64 * 1024

/** POST /events: a batch of 100 records with their line items (docs/producers.md). */
export const EVENTS_BODY_LIMIT = 1024 * 1024
