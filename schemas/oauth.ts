import { Type } from '@sinclair/typebox'

const Str = (description: string) => Type.Optional(Type.String({ description }))

/**
 * Authorization request parameters. All optional in the schema on purpose: which errors may redirect and which
 * may not depends on which parameter is wrong (RFC 6749 4.1.2.1), so the service checks them itself.
 */
export const AuthorizeQuery = Type.Object({
  client_id: Str('The app\'s client_id.'),
  redirect_uri: Str('One of the app\'s registered redirect URIs, exactly.'),
  response_type: Str('code (the default).'),
  scope: Str('Space-separated scopes; default: every scope the app registered.'),
  state: Str('Opaque value returned unchanged on the redirect.'),
  code_challenge: Str('PKCE: BASE64URL(SHA256(code_verifier)).'),
  code_challenge_method: Str('S256.'),
  resource: Str('RFC 8707: the MCP endpoint\'s URL or the public API base URL; default: the public API.'),
  org_ref_id: Str('Organisation to install into; default: the signed-in user\'s.'),
  entity_ref_id: Str('Entity to install into; without it the user picks one on the page.')
})

export const AuthorizeDecision = Type.Object({
  ...AuthorizeQuery.properties,
  decision: Type.Unsafe<'allow' | 'deny'>({ type: 'string', enum: ['allow', 'deny'], description: 'allow or deny' })
})

export const TokenRequest = Type.Object({
  grant_type: Str('authorization_code or refresh_token.'),
  code: Str('authorization_code grant.'),
  redirect_uri: Str('authorization_code grant: the redirect_uri of the authorization request.'),
  code_verifier: Str('authorization_code grant: the PKCE verifier.'),
  refresh_token: Str('refresh_token grant.'),
  resource: Str('RFC 8707: the resource of the grant (optional; another one is invalid_target).'),
  scope: Str('Ignored: the install\'s granted scopes are always returned.'),
  client_id: Str('Client authentication in the body (or use HTTP Basic).'),
  client_secret: Str('Client authentication in the body (or use HTTP Basic).')
})

export const TokenResponse = Type.Object({
  access_token: Type.String(),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer(),
  refresh_token: Type.String(),
  scope: Type.String(),
  install_id: Type.String()
}, { additionalProperties: false })

export const RevokeRequest = Type.Object({
  token: Type.String(),
  token_type_hint: Str('refresh_token or access_token.'),
  client_id: Str('Client authentication in the body (or use HTTP Basic).'),
  client_secret: Str('Client authentication in the body (or use HTTP Basic).')
})

const Uri = Type.String({ maxLength: 2048 })
const AuthMethod = Type.Unsafe<'none' | 'client_secret_basic' | 'client_secret_post'>({
  type: 'string',
  enum: ['none', 'client_secret_basic', 'client_secret_post'],
  description: 'none: a public client (PKCE only). Default client_secret_basic (RFC 7591 2).'
})

/** RFC 7591 2: client metadata. Fields this server does not use are accepted and ignored, as the RFC asks. */
export const RegistrationRequest = Type.Object({
  redirect_uris: Type.Array(Uri, {
    minItems: 1,
    maxItems: 10,
    description: 'https URLs, loopback http URLs on any port (RFC 8252 7.3), or private-use schemes such as cursor://.'
  }),
  client_name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  client_uri: Type.Optional(Type.String({ maxLength: 2048, pattern: '^https://', description: 'An https URL.' })),
  token_endpoint_auth_method: Type.Optional(AuthMethod),
  grant_types: Type.Optional(Type.Array(Type.String(), { maxItems: 10 })),
  response_types: Type.Optional(Type.Array(Type.String(), { maxItems: 10 })),
  scope: Type.Optional(Type.String({ maxLength: 2048, description: 'Space-separated; default: the wired scopes.' }))
}, { additionalProperties: true })

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
}, { additionalProperties: false })
