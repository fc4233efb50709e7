import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { BODY_LIMIT, EVENTS_BODY_LIMIT } from '../../../lib/limits.js'
import { ROOT } from '../../../lib/root.js'
import { errors } from '../../../plugins/infrastructure/errors.js'

t.test('the body limits are the 64 KiB (1 MiB for events) the rules state, and a 413 names it in bytes', async t => {
  t.equal(BODY_LIMIT, 64 * 1024)
  t.equal(EVENTS_BODY_LIMIT, 1024 * 1024, 'POST /events: a batch of records takes more')
  t.match(readFileSync(join(ROOT, 'docs/rules.md'), 'utf8'),
    /body over 64 KiB \(1 MiB on `POST \/events`\) 413 `payload_too_large`/)
  t.equal(errors.payloadTooLarge(BODY_LIMIT).message, 'Request body is larger than 65536 bytes.')
  t.equal(errors.payloadTooLarge(EVENTS_BODY_LIMIT).message, 'Request body is larger than 1048576 bytes.')
})
