import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { BODY_LIMIT } from '../../../lib/limits.js'
import { ROOT } from '../../../lib/root.js'
import { errors } from '../../../plugins/errors.js'

t.test('the body limit is the 64 KiB the rules state, and its 413 names it in bytes', async t => {
  t.equal(BODY_LIMIT, 64 * 1024)
  t.match(readFileSync(join(ROOT, 'docs/rules.md'), 'utf8'), /body over 64 KiB 413 `payload_too_large`/)
  t.equal(errors.payloadTooLarge(BODY_LIMIT).message, 'Request body is larger than 65536 bytes.')
})
