import fc from 'fast-check'
import { type Hints, type JsonSchema, broken, deep, edgeString, mutated, toJson, valid, wrongType } from './schema.js'

/**
 * A request as generated: method, path and query with «placeholders» (tokens, ids of fixtures) that are filled in
 * when it is sent, so that a reproducer stays short and readable and a rotated token is always the current one.
 */
export interface FuzzRequest {
  /** The operation it was generated for, `METHOD /template`. */
  op: string
  method: string
  /** Percent-encoded path, placeholders allowed. */
  path: string
  /** `''` or `?…`, percent-encoded, placeholders allowed. */
  query: string
  headers: Record<string, string>
  body?: string | Buffer
}

export type Surface = 'public' | 'user' | 'owner' | 'events' | 'client' | 'mcp' | 'none'

export interface Operation {
  method: string
  /** Route template, `:name` parameters (and `*`). */
  path: string
  from: 'openapi' | 'outside the OpenAPI document'
  query: Record<string, JsonSchema>
  body?: JsonSchema
  /** Bodies of JSON-RPC messages (/mcp). */
  rpc?: fc.Arbitrary<unknown>
  /** Form bodies are accepted (the OAuth routes). */
  forms?: boolean
  hints: Hints
  surface: Surface
  /** Extra headers that matter on this route (MCP sessions, CSRF checks). */
  headers?: fc.Arbitrary<Record<string, string>>
  /** Whole bodies that succeed (the schema alone rarely gets every field right at once). */
  good?: fc.Arbitrary<unknown>
  /** Whole query strings that succeed. */
  goodQuery?: fc.Arbitrary<string>
  /** How often, relative to the others (default 1; routes with bodies and /mcp get more). */
  weight?: number
}

/** encodeURIComponent, with lone surrogates (which it refuses) made U+FFFD first. */
export const enc = (s: string): string =>
  encodeURIComponent(s.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd'))

const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64')

/** Authorization values that are wrong in every way a client can get them wrong. */
const junkAuthorization = fc.constantFrom(
  '',
  'Bearer',
  'Bearer ',
  'Bearer  ',
  'bearer «access»',
  'BEARER «access»',
  'Bearer «access» extra',
  'Bearer «access»,Bearer «access»',
  'Bearer «access»\u0000',
  'Bearer a.b.c',
  'Bearer not-a-jwt',
  'Bearer e30.e30.',
  'Bearer ..',
  'Bearer «events»',
  'Bearer «user»',
  'Bearer «user_expired»',
  'Basic «basic»',
  'Basic !!!',
  `Basic ${b64('nocolon')}`,
  `Basic ${b64(':')}`,
  `Basic ${b64('%zz:%E0%A4%A')}`,
  `Basic ${b64(Buffer.from([0xff, 0x3a, 0xfe]))}`,
  'Digest username="x"',
  'Bearer ' + 'x'.repeat(10_000),
  'Bearer ' + 'a.'.repeat(3_000)
)

const forged = fc.constantFrom(
  '«forged_expired»',
  '«forged_future_iat»',
  '«forged_wrong_aud»',
  '«forged_alg_none»',
  '«forged_hs256_public_key»',
  '«forged_other_key»',
  '«forged_no_sub»',
  '«forged_unknown_install»',
  '«forged_jti_not_v7»',
  '«forged_wrong_tenant»'
)

const bearer = (token: fc.Arbitrary<string>) => token.map(v => ({ authorization: `Bearer ${v}` }))
const junk = fc.oneof(
  fc.constant({}),
  junkAuthorization.map(v => ({ authorization: v })),
  fc.string({ maxLength: 30 }).map(v => ({ authorization: v }))
)
const badCookie = fc.constantFrom(
  'session=%E0%A4%A',
  'session=%',
  'session=',
  'session=«access»',
  'session=a.b.c',
  'a=b; session=«user»; session=x',
  '=; ;;session',
  'session="«user»"'
)

/** Credentials for each surface: mostly the right ones, so that requests get past authentication. */
export function authorization (surface: Surface): fc.Arbitrary<Record<string, string>> {
  switch (surface) {
    case 'public':
      return fc.oneof(
        { arbitrary: bearer(fc.constant('«access»')), weight: 12 },
        {
          arbitrary: bearer(
            fc.constantFrom('«access_limited»', '«access_other»', '«access_uninstalled»', '«access_disabled»')
          ),
          weight: 3
        },
        { arbitrary: bearer(forged), weight: 2 },
        { arbitrary: junk, weight: 2 }
      )
    case 'user':
    case 'owner':
      return fc.oneof(
        { arbitrary: bearer(fc.constant(surface === 'user' ? '«user»' : '«owner»')), weight: 10 },
        {
          arbitrary: fc.constant({ cookie: `other=1; session=${surface === 'user' ? '«user»' : '«owner»'}` }),
          weight: 2
        },
        { arbitrary: bearer(fc.constantFrom('«user»', '«owner»', '«user_expired»', '«access»')), weight: 2 },
        { arbitrary: badCookie.map(cookie => ({ cookie })), weight: 2 },
        { arbitrary: junk, weight: 2 }
      )
    case 'events':
      return fc.oneof(
        { arbitrary: bearer(fc.constant('«events»')), weight: 10 },
        {
          arbitrary: fc.constantFrom('«events»', 'bearer «events»', 'Bearer «events» ', 'Bearer «events»x')
            .map(authorization => ({ authorization })),
          weight: 2
        },
        { arbitrary: junk, weight: 2 }
      )
    case 'client':
      return fc.oneof(
        { arbitrary: fc.constant({ authorization: 'Basic «basic»' }), weight: 5 },
        { arbitrary: fc.constant({}), weight: 5 },
        { arbitrary: junk, weight: 2 }
      )
    case 'mcp': {
      // The credentials and the session go together: a session answers only to the token that opened it.
      const session = fc.constantFrom('«session»', '«session_anon»', '', '00000000-0000-0000-0000-000000000000',
        'x'.repeat(1000), '«session», «session»')
      return fc.oneof<Array<fc.WeightedArbitrary<Record<string, string>>>>(
        { arbitrary: fc.constant({ authorization: 'Bearer «access»', 'mcp-session-id': '«session»' }), weight: 8 },
        { arbitrary: fc.constant({ 'mcp-session-id': '«session_anon»' }), weight: 6 },
        { arbitrary: fc.constantFrom<Record<string, string>>({}, { authorization: 'Bearer «access»' }), weight: 2 },
        {
          arbitrary: fc.tuple(
            fc.oneof(
              bearer(fc.constantFrom('«access»', '«access_limited»', '«access_other»', '«access_uninstalled»')),
              bearer(forged),
              junk
            ),
            fc.option(session, { nil: undefined })
          ).map(([auth, id]) => (id === undefined ? auth : { ...auth, 'mcp-session-id': id })),
          weight: 3
        }
      )
    }
    case 'none':
      return fc.oneof({ arbitrary: fc.constant({}), weight: 6 }, { arbitrary: junk, weight: 1 })
  }
}

/** Path segments at the edges: empty, at and past the 256-character limit, NUL, broken percent-encoding, `..`. */
const edgeSegment = fc.constantFrom(
  '',
  'a'.repeat(255),
  'a'.repeat(256),
  'a'.repeat(257),
  'a'.repeat(5_000),
  '%00',
  'a%00b',
  '%E0%A4%A',
  '%',
  '%zz',
  '%2',
  '..',
  '.',
  '%2e%2e',
  '%2F',
  '%2f..%2f..%2f',
  '%C0%AF',
  '%FF%FE',
  '%ED%A0%80',
  '%F4%90%80%80',
  '%C3%A9',
  '%F0%9F%98%80',
  '%20',
  '+',
  '0',
  '-1',
  'null',
  '__proto__',
  'constructor',
  '%5B%5D',
  "'%20OR%201=1--",
  '«org»%00',
  '%C2%ABorg%C2%BB' + 'a'.repeat(250)
)

/** A path parameter that replaces the good one, now and then: an edge segment, or any text, percent-encoded. */
export const badSegment: fc.Arbitrary<string | null> = fc.oneof(
  { arbitrary: fc.constant(null), weight: 24 },
  { arbitrary: edgeSegment, weight: 4 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 20 }).map(s => enc(s)), weight: 1 },
  { arbitrary: fc.string({ unit: 'grapheme', maxLength: 300 }).map(s => enc(s)), weight: 1 }
)

/** A query string: declared parameters (good, wrong or repeated), unknown ones, and broken encodings. */
export function queryString (
  declared: Record<string, JsonSchema>,
  hints: Hints,
  good?: fc.Arbitrary<string>
): fc.Arbitrary<string> {
  const pairs = Object.entries(declared).map(([name, schema]) =>
    fc.option(
      fc.oneof(
        { arbitrary: valid(schema, hints, name).map(v => [`${enc(name)}=${enc(String(v))}`]), weight: 8 },
        {
          arbitrary: broken(schema).map(v => [`${enc(name)}=${enc(typeof v === 'string' ? v : JSON.stringify(v))}`]),
          weight: 2
        },
        { arbitrary: fc.constant([`${enc(name)}`, `${enc(name)}=`]), weight: 1 },
        {
          arbitrary: fc.tuple(valid(schema, hints, name), valid(schema, hints, name))
            .map(([a, b]) => [`${enc(name)}=${enc(String(a))}`, `${enc(name)}=${enc(String(b))}`]),
          weight: 1
        }
      ),
      { freq: 3, nil: [] as string[] }
    )
  )
  const extra = fc.oneof(
    { arbitrary: fc.constant([] as string[]), weight: 8 },
    {
      arbitrary: fc.array(fc.tuple(fc.string({ maxLength: 10 }), fc.string({ maxLength: 20 })), { maxLength: 3 })
        .map(kv => kv.map(([k, v]) => `${enc(k)}=${enc(v)}`)),
      weight: 2
    },
    {
      arbitrary: fc.constantFrom('%', '%zz', 'a=%E0%A4%A', 'a=%00', '&&&', '=', 'a[b]=1', '__proto__[x]=1',
        'constructor[prototype][x]=1', 'a=' + 'x'.repeat(10_000), 'limit=1&limit=2&limit=3', 'include_inactive=')
        .map(s => [s]),
      weight: 2
    }
  )
  const generated = fc.tuple(fc.tuple(...pairs), extra).map(([declaredPairs, extraPairs]) => {
    const all = [...declaredPairs.flat(), ...extraPairs]
    return all.length > 0 ? `?${all.join('&')}` : ''
  })
  if (!good) return generated
  return fc.oneof(
    { arbitrary: good, weight: 3 },
    { arbitrary: fc.tuple(good, extra).map(([q, e]) => [q, ...e].join('&')), weight: 1 },
    { arbitrary: generated, weight: 4 }
  )
}

const JSON_TYPES = [
  'application/json; charset=utf-8',
  'application/json; charset=latin1',
  'application/json;charset=UTF-8',
  'APPLICATION/JSON',
  'application/json;',
  'application/json; boundary=x',
  'application/jsonx',
  'application/x-json',
  'text/json',
  'text/plain',
  'text/html',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=xyz',
  'application/xml',
  '*/*',
  '',
  'application/json, text/plain',
  'application/merge-patch+json',
  'application/vnd.api+json',
  ';;;',
  'application/json; charset="utf-8"',
  ' application/json'
]

const jsonType = fc.oneof(
  { arbitrary: fc.constant('application/json'), weight: 10 },
  { arbitrary: fc.constantFrom(...JSON_TYPES), weight: 2 },
  { arbitrary: fc.constant(undefined), weight: 1 }
)

export interface Body {
  payload?: string | Buffer
  type?: string
}

const json = (value: fc.Arbitrary<unknown>): fc.Arbitrary<Body> =>
  fc.tuple(value, jsonType).map(([v, type]) => ({ payload: toJson(v), type }))

/** UTF-8 bytes that are not text: a lone continuation byte, an overlong form, a surrogate, past U+10FFFF, cut. */
const BAD_UTF8 = [
  [0xff], [0xfe, 0xff], [0x80], [0xc0, 0xaf], [0xe0, 0x80, 0xaf], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80],
  [0xe2, 0x82], [0xc3]
].map(b => Buffer.from(b))
const MARK = '\ue000mark'

/** A JSON body whose one string holds bytes that are not UTF-8. */
const badBytes = (value: fc.Arbitrary<unknown>): fc.Arbitrary<Body> =>
  fc.tuple(value, fc.constantFrom(...BAD_UTF8)).map(([v, bad]) => {
    const obj = typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {}
    const key = Object.keys(obj).find(k => typeof obj[k] === 'string') ?? 'x'
    const text = Buffer.from(toJson({ ...obj, [key]: MARK }))
    const at = text.indexOf(MARK)
    const payload = Buffer.concat([text.subarray(0, at), bad, text.subarray(at + Buffer.byteLength(MARK))])
    return { payload, type: 'application/json' }
  })

const LIMIT = 64 * 1024
const sized = (n: number) => `{"a":"${'x'.repeat(n - 8)}"}`

/** Bodies of every kind, built around `schema` when the route has one. */
export function body (
  schema: JsonSchema | undefined,
  hints: Hints,
  forms: boolean,
  known?: fc.Arbitrary<unknown>
): fc.Arbitrary<Body> {
  const s = schema ?? { type: 'object' }
  const good = known
    ? fc.oneof({ arbitrary: known, weight: 2 }, { arbitrary: valid(s, hints), weight: 1 })
    : valid(s, hints)
  const kinds: Array<fc.WeightedArbitrary<Body>> = [
    { arbitrary: json(good), weight: schema ? 10 : 1 },
    { arbitrary: json(mutated(s, hints, good)), weight: schema ? 10 : 1 },
    {
      arbitrary: json(
        fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.constantFrom(null, [], '', 0, true, [{}]), wrongType())
      ),
      weight: 2
    },
    {
      arbitrary: fc.tuple(
        fc.oneof(
          fc.constantFrom('{', '{"a":', 'nul', '[1,]', '{"a":1}x', "{'a':1}", 'NaN', '1e999', '{"a":"\\ud800"}',
            '{"a":"\\u0000"}', '\u0000', '{"__proto__":{"x":1}}', '{"constructor":{"prototype":{"x":1}}}', ' ',
            '\ufeff{}', '{"a":1,"a":2}', '"\\', '{"a":"\\x"}', '{}'.repeat(1000)),
          fc.string({ maxLength: 50 }),
          fc.string({ unit: 'binary', maxLength: 50 })
        ),
        jsonType
      ).map(([payload, type]) => ({ payload, type })),
      weight: 2
    },
    {
      arbitrary: fc.constantFrom(
        deep(1_000, 'array'), deep(5_000, 'array'), deep(20_000, 'array'), deep(40_000, 'array'),
        deep(5_000, 'object'), deep(12_000, 'object')
      ).map(d => ({ payload: toJson(d), type: 'application/json' })),
      weight: 1
    },
    {
      arbitrary: good.chain(v => {
        const obj = typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {}
        const keys = Object.keys(obj)
        return fc.constantFrom(...(keys.length ? keys : ['data'])).chain(k =>
          fc.constantFrom(deep(3_000, 'array'), deep(8_000, 'object'), deep(20_000, 'array'))
            .map(d => ({ payload: toJson({ ...obj, [k]: d }), type: 'application/json' })))
      }),
      weight: 1
    },
    { arbitrary: badBytes(good), weight: 2 },
    {
      arbitrary: fc.oneof(
        good.map(v => ({ payload: toJson({ ...(v as object), pad: 'x'.repeat(70_000) }), type: 'application/json' })),
        fc.constantFrom(LIMIT - 1, LIMIT, LIMIT + 1, 1_000_000)
          .map(n => ({ payload: sized(n), type: 'application/json' }))
      ),
      weight: 1
    },
    {
      arbitrary: fc.oneof(
        fc.constant<Body>({}),
        fc.constant<Body>({ type: 'application/json' }),
        fc.constant<Body>({ payload: '', type: 'application/json' })
      ),
      weight: schema ? 1 : 12
    },
    {
      arbitrary: fc.oneof(
        {
          arbitrary: good.map(v => ({ payload: form(v), type: 'application/x-www-form-urlencoded' })),
          weight: forms ? 8 : 1
        },
        {
          arbitrary: fc.constantFrom('a=%zz', '%', 'a=1&a=2', 'grant_type=authorization_code&grant_type=refresh_token',
            '&&=&', 'x'.repeat(70_000), 'token=%00', 'decision=allow&decision=deny',
            'client_id=«client_id»&client_id=x')
            .map(payload => ({ payload, type: 'application/x-www-form-urlencoded' })),
          weight: 2
        }
      ),
      weight: forms ? 8 : 1
    }
  ]
  return fc.oneof(...kinds)
}

/** Form encoding of an object (arrays repeat the key; objects as JSON text). */
function form (v: unknown): string {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return String(v)
  const p = new URLSearchParams()
  for (const [k, x] of Object.entries(v)) {
    for (const item of Array.isArray(x) ? x : [x]) p.append(k, typeof item === 'string' ? item : JSON.stringify(item))
  }
  return p.toString()
}

/** Headers any client might send, odd ones included. */
export const oddHeaders: fc.Arbitrary<Record<string, string>> = fc.record(
  {
    accept: fc.constantFrom('*/*', 'application/json', 'text/html', 'application/xml', '', 'application/json;q=0'),
    'x-request-id': fc.constantFrom('fuzz-1', 'a'.repeat(128), 'a'.repeat(129), 'bad id!', '', '../x', '«access»'),
    'content-encoding': fc.constantFrom('gzip', 'br', 'identity', 'x'),
    'accept-encoding': fc.constantFrom('gzip', 'br, deflate', '*', 'x;q=0'),
    'x-forwarded-for': fc.constantFrom('1.2.3.4', 'not-an-ip', '::1, 10.0.0.1'),
    'if-none-match': fc.constantFrom('*', '"x"', 'W/"y"'),
    range: fc.constantFrom('bytes=0-1', 'bytes=x', 'bytes=99999999-'),
    'accept-language': fc.constantFrom('en', '*', 'x'.repeat(1000))
  },
  { requiredKeys: [] }
)

/** What matters on /mcp besides the credentials: Accept, the protocol version, Host and Origin (the guard). */
export const mcpHeaders: fc.Arbitrary<Record<string, string>> = fc.record(
  {
    accept: fc.oneof(
      { arbitrary: fc.constant('application/json, text/event-stream'), weight: 10 },
      { arbitrary: fc.constantFrom('application/json', 'text/event-stream', '*/*', '', 'text/html'), weight: 2 }
    ),
    'mcp-protocol-version': fc.constantFrom('2025-11-25', '2025-06-18', '2024-11-05', '1999-01-01', ''),
    host: fc.oneof(
      { arbitrary: fc.constant('localhost'), weight: 12 },
      { arbitrary: fc.constantFrom('gateway.test', 'evil.example', '127.0.0.1:1', '[::1]', 'LOCALHOST', ''), weight: 1 }
    ),
    origin: fc.oneof(
      { arbitrary: fc.constant('http://gateway.test'), weight: 8 },
      { arbitrary: fc.constantFrom('https://evil.example', 'null', ''), weight: 1 }
    ),
    'last-event-id': fc.constantFrom('0', 'x', '')
  },
  { requiredKeys: ['accept'] }
)

/** JSON-RPC messages for /mcp: every method the server knows and some it does not, with good and bad params. */
export function rpcMessage (
  tools: Array<{ name: string, inputSchema: JsonSchema }>,
  resourceUris: string[],
  hints: Hints
): fc.Arbitrary<unknown> {
  const id = fc.oneof(
    { arbitrary: fc.integer(), weight: 8 },
    { arbitrary: fc.string({ maxLength: 10 }), weight: 2 },
    { arbitrary: fc.constantFrom(null, {}, [], 1.5, true, 'x'.repeat(1_000)), weight: 1 }
  )
  const toolCall = fc.oneof(
    ...tools.map(tool =>
      fc.record({
        name: fc.constant(tool.name),
        arguments: fc.oneof(
          { arbitrary: valid(tool.inputSchema, hints), weight: 6 },
          { arbitrary: mutated(tool.inputSchema, hints), weight: 4 },
          { arbitrary: wrongType(), weight: 1 }
        )
      }, { requiredKeys: ['name'] })
    ),
    fc.record({ name: fc.oneof(fc.string(), wrongType()), arguments: fc.jsonValue({ maxDepth: 2 }) })
  )
  const initialize = fc.record({
    protocolVersion: fc.oneof(fc.constantFrom('2025-11-25', '2025-06-18', '2024-11-05', 'bogus'), wrongType()),
    capabilities: fc.oneof(fc.constant({}), wrongType()),
    clientInfo: fc.oneof(fc.constant({ name: 'fuzz', version: '1' }), wrongType())
  }, { requiredKeys: [] })
  const call = fc.oneof(
    {
      arbitrary: fc.record({
        method: fc.constant('tools/call'),
        params: fc.oneof({ arbitrary: toolCall, weight: 10 }, { arbitrary: wrongType(), weight: 1 })
      }),
      weight: 10
    },
    { arbitrary: fc.record({ method: fc.constant('initialize'), params: initialize }), weight: 3 },
    {
      arbitrary: fc.record({
        method: fc.constant('resources/read'),
        params: fc.oneof(
          fc.record({ uri: fc.oneof(fc.constantFrom(...resourceUris), edgeString()) }),
          wrongType()
        )
      }),
      weight: 2
    },
    {
      arbitrary: fc.record({
        method: fc.constantFrom('ping', 'tools/list', 'resources/list', 'resources/templates/list', 'prompts/list',
          'prompts/get', 'logging/setLevel', 'completion/complete', 'notifications/initialized',
          'notifications/cancelled', 'sampling/createMessage', 'nope', ''),
        params: fc.oneof(
          fc.constant(undefined),
          fc.constant({}),
          fc.record({ cursor: fc.oneof(edgeString(), wrongType()) }),
          fc.record({ level: fc.oneof(fc.constantFrom('debug', 'info', 'nope'), wrongType()) }),
          wrongType()
        )
      }, { requiredKeys: ['method'] }),
      weight: 3
    },
    { arbitrary: fc.record({ method: wrongType() }), weight: 1 }
  )
  const message = fc.tuple(
    fc.oneof(
      { arbitrary: fc.constant('2.0'), weight: 12 },
      { arbitrary: fc.constantFrom('1.0', 2, null, undefined), weight: 1 }
    ),
    fc.option(id, { freq: 12, nil: undefined }),
    call
  ).map(([jsonrpc, messageId, c]) => ({ jsonrpc, ...(messageId === undefined ? {} : { id: messageId }), ...c }))
  return fc.oneof(
    { arbitrary: message, weight: 12 },
    { arbitrary: fc.array(message, { minLength: 0, maxLength: 3 }), weight: 1 }
  )
}
