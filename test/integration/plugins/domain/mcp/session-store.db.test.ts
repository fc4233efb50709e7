// The MCP session store (plugins/domain/mcp/session-store.ts) against the database under test: a session's row as
// written and read back, its use recorded only forwards, its end heard by every instance, and idle rows swept.
import t from 'tap'
import {
  createSessionStore, SESSION_ENDED_CHANNEL, type StoredSession
} from '../../../../../plugins/domain/mcp/session-store.js'
import { ManualClock } from '../../../../support/clock.js'
import { build, eventually, unique } from '../../../../support/helper.js'

// The app's own sweep deletes the rows idle by its clock: stopped in 2000, it never reaches this file's rows.
const app = await build(t, { WEBHOOK_WORKER: 'false' }, { clock: new ManualClock(Date.parse('2000-01-01T00:00:00Z')) })
const store = createSessionStore(app.db)

const T0 = Date.parse('2026-11-01T00:00:00.000Z')

function session (over: Partial<StoredSession> = {}): StoredSession {
  return {
    id: unique('session'),
    installId: unique('install'),
    protocolVersion: '2025-11-25',
    clientInfo: { name: 'tap', version: '1.0.0', title: 'Tap ✓', icons: [{ src: 'https://app.example.com/i.png' }] },
    clientCapabilities: { sampling: {}, elicitation: { form: {}, url: {} }, roots: { listChanged: true } },
    lastSeen: T0 + 123,
    ...over
  }
}

t.test('a session reads back as it was written, to the millisecond', async t => {
  const s = session()
  await store.insert(s)
  t.same(await store.find(s.id), s, 'every field, the JSON of client info and capabilities included')
  t.equal((await store.find(s.id))?.lastSeen, T0 + 123)

  const anonymous = session({ installId: null, protocolVersion: '2025-06-18', clientInfo: { name: 'a', version: '0' } })
  await store.insert(anonymous)
  t.same(await store.find(anonymous.id), anonymous, 'opened without a token: no install')

  t.equal(await store.find(unique('session')), undefined, 'an id never written: undefined')
  await t.rejects(store.insert({ ...session(), id: s.id }), 'an id is written once')
  t.same(await store.find(s.id), s, 'and the first row stays as it was')
})

t.test('touch records a later use, never an earlier one; false once the row is gone', async t => {
  const s = session({ lastSeen: T0 })
  await store.insert(s)

  t.equal(await store.touch(s.id, T0 + 60_000), true)
  t.equal((await store.find(s.id))?.lastSeen, T0 + 60_000, 'a later use moves the last use')

  t.equal(await store.touch(s.id, T0 + 30_000), true, 'an earlier use (from a slower instance) still finds the row')
  t.equal((await store.find(s.id))?.lastSeen, T0 + 60_000, 'and does not move the last use back')

  t.equal(await store.touch(s.id, T0 + 60_001), true)
  t.equal((await store.find(s.id))?.lastSeen, T0 + 60_001, 'one millisecond later is later')

  t.equal(await store.touch(unique('session'), T0), false, 'no such session: false')
  await store.remove(s.id)
  t.equal(await store.touch(s.id, T0 + 120_000), false, 'an ended session: false')
  t.equal(await store.find(s.id), undefined, 'and touch did not bring it back')
})

t.test("remove deletes the row and tells every instance the session's id", async t => {
  const heard: string[] = []
  await app.db.listen(SESSION_ENDED_CHANNEL, id => heard.push(id))
  const s = session()
  const other = session()
  await store.insert(s)
  await store.insert(other)

  await store.remove(s.id)
  t.equal(await store.find(s.id), undefined, 'the row is gone')
  t.same(await store.find(other.id), other, 'another session is untouched')
  await eventually(() => heard.includes(s.id), { what: 'the notification of the end' })
  t.ok(heard.includes(s.id), "the session's id is notified on " + SESSION_ENDED_CHANNEL)
  t.notOk(heard.includes(other.id), "nothing of the other session's")

  await t.resolves(store.remove(s.id), 'removing it again is no error')
})

t.test('removeIdle deletes the sessions last used before the instant, and counts them', async t => {
  // Earlier than every other test's sessions, so that only these can be idle at the instants below.
  const E0 = Date.parse('2025-01-01T00:00:00.000Z')
  const old = session({ lastSeen: E0 + 1_000 })
  const atBound = session({ lastSeen: E0 + 2_000 })
  const touched = session({ lastSeen: E0 + 500 })
  const recent = session({ lastSeen: E0 + 3_000 })
  for (const s of [old, atBound, touched, recent]) await store.insert(s)
  await store.touch(touched.id, E0 + 2_500)

  t.equal(await store.removeIdle(E0 + 2_000), 1, 'one session was last used before the instant')
  t.equal(await store.find(old.id), undefined, 'the idle one is gone')
  t.ok(await store.find(atBound.id), 'last used exactly at the instant: kept')
  t.ok(await store.find(touched.id), 'written before it but used since: kept')
  t.ok(await store.find(recent.id), 'used after it: kept')

  t.equal(await store.removeIdle(E0 + 2_000), 0, 'nothing more to delete at the same instant')
  t.equal(await store.removeIdle(E0 + 2_501), 2, 'later, the next two')
  t.equal(await store.find(touched.id), undefined)
  t.equal(await store.find(atBound.id), undefined)
  t.ok(await store.find(recent.id), 'the recent one still kept')
})
