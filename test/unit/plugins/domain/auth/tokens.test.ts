import { createSign, generateKeyPairSync } from 'node:crypto'
import Fastify from 'fastify'
import type { JWT } from '@fastify/jwt'
import fc from 'fast-check'
import t from 'tap'
import { uuidv7 } from '../../../../../lib/crypto.js'
import configPlugin, { type Config } from '../../../../../plugins/infrastructure/config/index.js'
import { ApiError } from '../../../../../plugins/infrastructure/errors.js'
import { ManualClock } from '../../../../support/clock.js'
import accessTokens, {
  ACCESS_TOKEN_AUDIENCE,
  knownResources,
  type TokenSubject
} from '../../../../../plugins/domain/auth/tokens.js'

/**
 * The access-token plugin alone, on a bare Fastify instance with the three settings it reads: no database, no
 * routes. The verified-token cache lives inside it, so cache hits are counted by wrapping the plugin's own JWT
 * verifier, which it calls only on a miss.
 */
const signingKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey
  .export({ format: 'pem', type: 'pkcs8' }).toString()
const config = {
  tokenSigningKey: signingKey,
  publicBaseUrl: 'https://gw.example',
  mcpBaseUrl: 'https://mcp.gw.example',
  accessTokenMaxLifetime: 3600
} as Config
const MCP = knownResources(config).mcp

async function plugin (overrides: Partial<Config> = {}) {
  const app = Fastify()
  // The app's clock, as buildApp decorates it; it starts at the real time, since issue times here are real ones.
  const clock = new ManualClock(Date.now())
  app.decorate('clock', clock)
  await app.register(configPlugin, { config: { ...config, ...overrides } })
  await app.register(accessTokens)
  await app.ready()
  const jwt = (app.jwt as unknown as { marketplace: JWT }).marketplace
  const real = jwt.verify.bind(jwt)
  const counter = { verified: 0 }
  jwt.verify = ((token: string) => {
    counter.verified++
    return real(token)
  }) as JWT['verify']
  return { app, tokens: app.accessTokens, counter, jwt, clock }
}

const { app, tokens, counter } = await plugin()
t.teardown(() => app.close())

const subject: TokenSubject = {
  installId: 'ins_1',
  clientId: 'mga_1',
  orgRefId: 'org_1',
  entityRefId: 'ent_1',
  scopes: ['invoices:read', 'bills:read']
}

/** The catalog error a verification throws, as code and message. */
function refusal (fn: () => unknown): string {
  try {
    fn()
  } catch (err) {
    if (err instanceof ApiError) return `${err.statusCode} ${err.code} ${err.message}`
    throw err
  }
  return 'accepted'
}
const INVALID = '401 invalid_token Invalid access token.'
const EXPIRED = '401 invalid_token Access token expired.'
const NOT_FOR_MCP =
  `401 invalid_token The access token was not issued for this endpoint: ask for one with resource=${MCP}.`

t.test('an issued token verifies, with its claims and the precise issue time', async t => {
  const now = Date.now()
  const token = tokens.issue(subject, now)
  const claims = tokens.verify(token)
  t.match(claims, {
    iss: 'https://gw.example',
    aud: ACCESS_TOKEN_AUDIENCE,
    sub: 'ins_1',
    client_id: 'mga_1',
    org_ref_id: 'org_1',
    entity_ref_id: 'ent_1',
    scope: 'invoices:read bills:read',
    iat: Math.floor(now / 1000),
    exp: Math.floor(now / 1000) + 3600,
    issuedAtMs: now
  })
  t.ok(Object.isFrozen(claims), 'the claims the cache shares are frozen')
  const [header] = token.split('.')
  t.same(JSON.parse(Buffer.from(header!, 'base64url').toString()), { alg: 'RS256', typ: 'at+jwt', kid: tokens.kid })
  t.equal(tokens.jwks.keys[0]!.kid, tokens.kid)
})

t.test('a cache hit skips the signature, and still checks the surface', async t => {
  const now = Date.now()
  const forPublic = tokens.issue(subject, now)
  const forMcp = tokens.issue(subject, now + 1, MCP)
  const before = counter.verified
  tokens.verify(forMcp, 'mcp')
  t.equal(counter.verified, before + 1, 'the first use verifies the signature')
  for (let i = 0; i < 5; i++) tokens.verify(forMcp, 'mcp')
  tokens.verify(forMcp, 'public')
  t.equal(counter.verified, before + 1, 'later uses, on either surface, do not')
  t.same(tokens.verify(forMcp, 'mcp').aud, [ACCESS_TOKEN_AUDIENCE, MCP], 'the MCP resource joins the audience')

  // A token for the public API alone is not one for the MCP endpoint, cached or not.
  t.equal(refusal(() => tokens.verify(forPublic, 'public')), 'accepted')
  t.equal(refusal(() => tokens.verify(forPublic, 'mcp')), NOT_FOR_MCP)
})

t.test('a token whose audience is the MCP endpoint alone works there only, cached or not', async t => {
  const now = Date.now()
  const mcpOnly = forge({ aud: MCP }, now)
  const before = counter.verified
  t.equal(refusal(() => tokens.verify(mcpOnly, 'mcp')), 'accepted')
  t.equal(refusal(() => tokens.verify(mcpOnly, 'public')), INVALID, 'refused on the public API from the cache')
  t.equal(refusal(() => tokens.verify(mcpOnly, 'mcp')), 'accepted', 'and still accepted on /mcp')
  t.equal(counter.verified, before + 1, 'one signature check for all three')
})

t.test('a cache hit still checks the clock', async t => {
  const longAgo = Date.now() - 2 * 3600_000
  const expired = tokens.issue(subject, longAgo, MCP)
  const before = counter.verified
  t.equal(refusal(() => tokens.verify(expired)), EXPIRED, 'expired when first seen')
  t.equal(refusal(() => tokens.verify(expired)), EXPIRED, 'and when found in the cache')
  t.equal(refusal(() => tokens.verify(expired, 'mcp')), EXPIRED)
  t.equal(counter.verified, before + 1, 'its signature was checked once: the expiry is checked on every use')
  const justExpired = tokens.issue(subject, Date.now() - 3600_000 - 1000)
  t.equal(refusal(() => tokens.verify(justExpired)), EXPIRED, 'exp is exclusive: an hour after iat it is over')
})

t.test('a cached token expires on the app\'s clock, at exp exactly', async t => {
  // Its own instance: this test moves the clock.
  const timed = await plugin()
  t.teardown(() => timed.app.close())
  const token = timed.tokens.issue(subject, timed.clock.now(), MCP)
  const { exp } = timed.tokens.verify(token)
  timed.clock.advance(exp * 1000 - 1 - timed.clock.now())
  t.equal(refusal(() => timed.tokens.verify(token)), 'accepted', 'a millisecond before exp')
  timed.clock.advance(1)
  t.equal(refusal(() => timed.tokens.verify(token)), EXPIRED, 'at exp')
  t.equal(refusal(() => timed.tokens.verify(token, 'mcp')), EXPIRED, 'on either surface')
  t.equal(timed.counter.verified, 1, 'all from the cache: the signature was checked once')
})

t.test('verification reads the time from the app\'s clock alone', async t => {
  // Its own instance: this test moves the clock, and the real time stays behind it.
  const timed = await plugin()
  t.teardown(() => timed.app.close())
  const now = timed.clock.now()
  const iat = Math.floor(now / 1000)
  const ahead = forge({}, now + 5 * 60_000)
  const notYet = forge({ nbf: iat + 120 }, now)
  const fresh = timed.tokens.issue(subject, now)
  t.equal(refusal(() => timed.tokens.verify(ahead)), INVALID, 'issued 5 minutes ahead of the clock')
  t.equal(refusal(() => timed.tokens.verify(notYet)), INVALID, 'not before 2 minutes from now')
  timed.clock.advance(5 * 60_000)
  t.equal(refusal(() => timed.tokens.verify(ahead)), 'accepted', 'once the clock reaches its issue time')
  t.equal(refusal(() => timed.tokens.verify(notYet)), 'accepted', 'once the clock passes nbf')
  timed.clock.advance(3600_000)
  t.equal(refusal(() => timed.tokens.verify(fresh)), EXPIRED, 'first seen after exp on the clock: expired')
})

t.test('a token that differs only before its last characters is not taken for a cached one', async t => {
  const token = tokens.issue(subject, Date.now())
  tokens.verify(token)
  const [h, p, s] = token.split('.')
  const payload = JSON.parse(Buffer.from(p!, 'base64url').toString())
  const tampered = `${h}.${Buffer.from(JSON.stringify({ ...payload, sub: 'ins_other' })).toString('base64url')}.${s}`
  t.equal(tampered.slice(-32), token.slice(-32), 'same cache key')
  const before = counter.verified
  t.equal(refusal(() => tokens.verify(tampered)), INVALID, 'compared whole, then its signature fails')
  t.equal(counter.verified, before + 1)
  t.equal(refusal(() => tokens.verify(token)), 'accepted', 'the genuine one still verifies')
})

// Tokens signed with the plugin's own key, with whatever claims and header a test needs.
function forge (claims: Record<string, unknown>, issuedAtMs: number, header: Record<string, unknown> = {}): string {
  const iat = Math.floor(issuedAtMs / 1000)
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url')
  const input = `${b64({ alg: 'RS256', typ: 'at+jwt', kid: tokens.kid, ...header })}.${b64({
    iss: 'https://gw.example',
    aud: ACCESS_TOKEN_AUDIENCE,
    sub: 'ins_1',
    client_id: 'mga_1',
    org_ref_id: 'org_1',
    entity_ref_id: 'ent_1',
    scope: 'invoices:read',
    iat,
    exp: iat + 3600,
    jti: uuidv7(issuedAtMs),
    ...claims
  })}`
  return `${input}.${createSign('RSA-SHA256').update(input).sign(signingKey).toString('base64url')}`
}

t.test('what is refused, signed with the right key all the same', async t => {
  const now = Date.now()
  const iat = Math.floor(now / 1000)
  const cases: Array<[string, string]> = [
    ['typ JWT', forge({}, now, { typ: 'JWT' })],
    ['another kid', forge({}, now, { kid: 'other' })],
    ['no kid', forge({}, now, { kid: undefined })],
    ['another audience', forge({ aud: 'user_session' }, now)],
    ['another issuer', forge({ iss: 'https://evil.example' }, now)],
    ['no sub', forge({ sub: undefined }, now)],
    ['an empty client_id', forge({ client_id: '' }, now)],
    ['no org_ref_id', forge({ org_ref_id: undefined }, now)],
    ['a numeric entity_ref_id', forge({ entity_ref_id: 7 }, now)],
    ['iat as text', forge({ iat: String(iat) }, now)],
    ['a lifetime over the ceiling', forge({ exp: iat + 3601 }, now)],
    ['a jti that is not a UUIDv7', forge({ jti: '6ba7b810-9dad-41d1-80b4-00c04fd430c8' }, now)],
    ['no jti', forge({ jti: undefined }, now)],
    ['issued more than a minute ahead', forge({}, now + 61_000 + 1000)],
    ['not a JWT', 'abc'],
    ['characters no bearer token has', `${tokens.issue(subject, now)}!`],
    ['a bad signature', `${tokens.issue(subject, now).slice(0, -4)}AAAA`],
    ['alg none', `${Buffer.from('{"alg":"none","typ":"at+jwt"}').toString('base64url')}.${
      Buffer.from(JSON.stringify({ sub: 'x' })).toString('base64url')}.`]
  ]
  for (const [what, token] of cases) t.equal(refusal(() => tokens.verify(token)), INVALID, what)
  t.equal(refusal(() => tokens.verify(forge({}, now + 30_000))), 'accepted', 'issued 30 s ahead: within the skew')
  // Refusals are not cached: each one is decided again, so a refused token cannot fill the cache.
  const before = counter.verified
  refusal(() => tokens.verify(cases[0]![1]))
  refusal(() => tokens.verify(cases[0]![1]))
  t.equal(counter.verified, before + 2, 'a refused token is verified again on every use')
})

t.test('the lifetime ceiling is the configured one', async t => {
  const short = await plugin({ accessTokenMaxLifetime: 600 })
  t.teardown(() => short.app.close())
  // A second instance because the ceiling is read once, at registration.
  t.equal(refusal(() => short.tokens.verify(short.tokens.issue(subject, Date.now()))), INVALID,
    'its own hour-long tokens are over a 10-minute ceiling')
})

t.test('property: a token verifies on the surfaces its audience admits, nowhere else', async t => {
  const now = Date.now()
  const audience = fc.subarray([ACCESS_TOKEN_AUDIENCE, MCP, 'https://other.example/mcp'], { minLength: 1 })
  fc.assert(fc.property(audience, fc.boolean(), fc.integer({ min: 0, max: 1_000_000 }), (aud, asArray, ms) => {
    const token = forge({ aud: aud.length === 1 && !asArray ? aud[0] : aud }, now - ms)
    const pub = refusal(() => tokens.verify(token, 'public'))
    const mcp = refusal(() => tokens.verify(token, 'mcp'))
    // An audience of neither is refused by the signature check itself, whatever the surface.
    if (!aud.some(a => a === ACCESS_TOKEN_AUDIENCE || a === MCP)) return pub === INVALID && mcp === INVALID
    return pub === (aud.includes(ACCESS_TOKEN_AUDIENCE) ? 'accepted' : INVALID) &&
      mcp === (aud.includes(MCP) ? 'accepted' : NOT_FOR_MCP)
  }), { numRuns: 60 })
  t.pass('public: marketplace_app in the audience; mcp: the MCP URL')
})

t.test('the cache holds at most 10,000 tokens, oldest out first', async t => {
  // Signing 10,001 RS256 tokens would take seconds: the verifier is stood in for, to decode without checking.
  const bounded = await plugin()
  t.teardown(() => bounded.app.close())
  const decode = bounded.jwt.decode.bind(bounded.jwt)
  let verified = 0
  bounded.jwt.verify = ((token: string) => {
    verified++
    return decode(token, { complete: true })
  }) as JWT['verify']
  const now = Date.now()
  const template = forge({}, now)
  const [h, p] = template.split('.')
  // Distinct last 32 characters: the signature part, unchecked here.
  const nth = (i: number) => `${h}.${p}.${String(i).padStart(40, 'A')}`
  for (let i = 0; i <= 10_000; i++) bounded.tokens.verify(nth(i))
  t.equal(verified, 10_001, 'each verified once')
  bounded.tokens.verify(nth(10_000))
  bounded.tokens.verify(nth(1))
  t.equal(verified, 10_001, 'the newest and the second oldest are still cached')
  bounded.tokens.verify(nth(0))
  t.equal(verified, 10_002, 'the oldest was dropped when the 10,001st came in')
  bounded.tokens.verify(nth(1))
  t.equal(verified, 10_003, 'and taking it back in dropped the next oldest')
})
