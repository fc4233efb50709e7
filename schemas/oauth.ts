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
  org_ref_id: Str('Organisation to install into.'),
  entity_ref_id: Str('Entity to install into.')
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
