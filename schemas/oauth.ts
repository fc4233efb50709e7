import { Type } from '@sinclair/typebox'
import { SAMPLE } from './examples.js'

const Str = (description: string, example?: string) =>
  Type.Optional(Type.String({ description, ...(example === undefined ? {} : { examples: [example] }) }))

/**
 * Authorization request parameters. All optional in the schema on purpose: which errors may redirect and which
 * may not depends on which parameter is wrong (RFC 6749 4.1.2.1), so the service checks them itself.
 */
export const AuthorizeQuery = Type.Object({
  // No examples for the app's own values: "Try it out" sends an example, and no client but the reader's works.
  client_id: Str('The app\'s client_id (`app_…`), from its registration.'),
  redirect_uri: Str('One of the app\'s registered redirect URIs, exactly.'),
  response_type: Str('code (the default).', 'code'),
  scope: Str('Space-separated scopes; default: every scope the app registered.', 'invoices:read bills:read'),
  state: Str('Opaque value returned unchanged on the redirect.', 'af0ifjsldkj'),
  code_challenge: Str('PKCE: BASE64URL(SHA256(code_verifier)).', 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM'),
  code_challenge_method: Str('S256.', 'S256'),
  resource: Str('RFC 8707: the MCP endpoint\'s URL (`<MCP_BASE_URL>/mcp`) or the public API base URL ' +
    '(`<PUBLIC_BASE_URL>/public/v1`); default: the public API.'),
  org_ref_id: Str('Organisation to install into; default: the signed-in user\'s.', SAMPLE.orgId),
  entity_ref_id: Str('Entity to install into; without it the user picks one on the page.', SAMPLE.entityId)
})

const authorizeSample = {
  client_id: SAMPLE.clientId,
  redirect_uri: SAMPLE.redirectUri,
  response_type: 'code',
  scope: 'invoices:read bills:read',
  state: 'af0ifjsldkj',
  code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
  code_challenge_method: 'S256',
  org_ref_id: SAMPLE.orgId,
  entity_ref_id: SAMPLE.entityId
}

export const AuthorizeDecision = Type.Object({
  ...AuthorizeQuery.properties,
  decision: Type.Unsafe<'allow' | 'deny'>({ type: 'string', enum: ['allow', 'deny'], description: 'allow or deny' })
}, { title: 'ConsentDecision', examples: [{ ...authorizeSample, decision: 'allow' }] })

export const TokenRequest = Type.Object({
  grant_type: Str('authorization_code or refresh_token.'),
  code: Str('authorization_code grant.'),
  redirect_uri: Str('authorization_code grant: the redirect_uri of the authorization request.'),
  code_verifier: Str('authorization_code grant: the PKCE verifier.'),
  refresh_token: Str('refresh_token grant.'),
  resource: Str('RFC 8707: the resource the access token is for, the MCP endpoint\'s URL or the public API base ' +
    'URL (one consent covers both); default: the one the consent named. Any other is invalid_target.'),
  scope: Str('Ignored: the install\'s granted scopes are always returned.'),
  client_id: Str('Client authentication in the body (or use HTTP Basic).'),
  client_secret: Str('Client authentication in the body (or use HTTP Basic).')
}, {
  title: 'TokenRequest',
  'x-examples': {
    authorization_code: {
      summary: 'Exchange the code of the consent redirect (a public client: client_id in the body)',
      value: {
        grant_type: 'authorization_code',
        code: SAMPLE.code,
        redirect_uri: SAMPLE.redirectUri,
        code_verifier: 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk',
        client_id: SAMPLE.clientId
      }
    },
    refresh_token: {
      summary: 'Rotate a refresh token (the old one stops working)',
      value: { grant_type: 'refresh_token', refresh_token: SAMPLE.refreshToken }
    }
  }
})

export const TokenResponse = Type.Object({
  access_token: Type.String(),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer(),
  refresh_token: Type.String(),
  scope: Type.String(),
  install_id: Type.String()
}, {
  title: 'TokenResponse',
  description: 'Tokens for the install.',
  additionalProperties: false,
  examples: [{
    access_token: 'eyJhbGciOiJSUzI1NiIsInR5cCI6ImF0K2p3dCIsImtpZCI6ImsxIn0.' +
      'eyJzdWIiOiJpbnNfVmI3S3BYMm1ROXdMcjRUeiJ9.c2lnbmF0dXJl',
    token_type: 'Bearer',
    expires_in: 3600,
    refresh_token: SAMPLE.refreshToken,
    scope: 'invoices:read bills:read',
    install_id: SAMPLE.installId
  }]
})

export const RevokeRequest = Type.Object({
  token: Type.String(),
  token_type_hint: Str('refresh_token or access_token.'),
  client_id: Str('Client authentication in the body (or use HTTP Basic).'),
  client_secret: Str('Client authentication in the body (or use HTTP Basic).')
}, {
  title: 'RevokeRequest',
  examples: [{ token: SAMPLE.refreshToken, token_type_hint: 'refresh_token', client_id: SAMPLE.clientId }]
})

const Uri = Type.String({ maxLength: 2048 })
const AuthMethod = Type.Unsafe<'none' | 'client_secret_basic' | 'client_secret_post'>({
  type: 'string',
  enum: ['none', 'client_secret_basic', 'client_secret_post'],
  description: 'none: a public client (PKCE only). Default client_secret_basic (RFC 7591 2).'
})

/** A client registering itself, as the examples show it: its metadata, and what the registration answers with. */
const clientSample = {
  client_name: 'Claude Code',
  redirect_uris: ['http://127.0.0.1/callback'],
  token_endpoint_auth_method: 'none',
  grant_types: ['authorization_code', 'refresh_token'],
  response_types: ['code'],
  scope: 'invoices:read bills:read'
}

/** RFC 7591 2: client metadata. Fields this server does not use are accepted and ignored, as the RFC asks. */
export const RegistrationRequest = Type.Object({
  redirect_uris: Type.Array(Uri, {
    minItems: 1,
    maxItems: 10,
    description: 'https URLs, loopback http URLs on any port (RFC 8252 7.3), or private-use schemes named by a ' +
      'reverse domain (com.example.app:/callback, RFC 8252 7.1) or cursor:, vscode:, vscode-insiders:. Stored ' +
      'normalised.'
  }),
  client_name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  client_uri: Type.Optional(Type.String({ maxLength: 2048, pattern: '^https://', description: 'An https URL.' })),
  token_endpoint_auth_method: Type.Optional(AuthMethod),
  grant_types: Type.Optional(Type.Array(Type.String(), {
    maxItems: 10,
    description: 'Must hold authorization_code; types other than it and refresh_token are dropped.'
  })),
  response_types: Type.Optional(Type.Array(Type.String(), { maxItems: 10 })),
  scope: Type.Optional(Type.String({ maxLength: 2048, description: 'Space-separated; default: the wired scopes.' }))
}, {
  title: 'ClientMetadata',
  additionalProperties: true,
  examples: [clientSample]
})

export const RegistrationResponse = Type.Object({
  client_id: Type.String(),
  client_secret: Type.Optional(Type.String({ description: 'Confidential clients only, shown once.' })),
  client_id_issued_at: Type.Integer(),
  client_secret_expires_at: Type.Optional(Type.Integer({ description: '0: the secret does not expire.' })),
  client_name: Type.String(),
  client_uri: Type.Optional(Type.String()),
  redirect_uris: Type.Array(Type.String()),
  token_endpoint_auth_method: AuthMethod,
  grant_types: Type.Array(Type.String()),
  response_types: Type.Array(Type.String()),
  scope: Type.String()
}, {
  title: 'RegisteredClient',
  additionalProperties: false,
  examples: [{ client_id: 'app_K8pQ2xZr7mVt4LwN', client_id_issued_at: 1795512600, ...clientSample }]
})

/** RFC 7517: the keys that verify access tokens, by kid. */
export const Jwks = Type.Object({
  keys: Type.Array(Type.Object({
    kty: Type.String(),
    kid: Type.String(),
    use: Type.Optional(Type.String()),
    alg: Type.Optional(Type.String()),
    n: Type.Optional(Type.String()),
    e: Type.Optional(Type.String())
  }, { title: 'Jwk', additionalProperties: true }))
}, {
  title: 'Jwks',
  description: 'The current signing keys.',
  examples: [{
    keys: [{
      kty: 'RSA',
      kid: 'NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs',
      use: 'sig',
      alg: 'RS256',
      n: '0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n' +
        '3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zg' +
        'dAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFC' +
        'ur-kEgU8awapJzKnqDKgw',
      e: 'AQAB'
    }]
  }]
})
