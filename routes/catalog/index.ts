import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { VERSION } from '../../lib/root.js'
import { anyOrigin, preflight } from '../../lib/open-cors.js'
import { knownResources } from '../../plugins/domain/auth/tokens.js'
import { WIRED_SCOPES } from '../../lib/scopes.js'
import { PROTOCOL_REVISIONS, SERVER_NAME, SESSION_REVISION } from '../../plugins/domain/mcp/index.js'
import { describeResource, describeTool } from '../../plugins/domain/mcp/registry.js'
import { Catalog } from '../../schemas/mcp.js'

const DESCRIPTION =
  'Acts on one tenant (organisation and entity) of the accounting system as an installed marketplace app: ' +
  'identity, webhook subscriptions and deliveries, and the accounting read routes.'

/** Discovery documents, all made from the one tool registry (docs/mcp.md#discovery-without-connecting). */
const catalog: FastifyPluginAsyncTypebox = async app => {
  const { publicBaseUrl } = app.config
  // The protected resource's `resource` must be exactly what the token endpoint knows as the MCP resource (RFC 8707).
  const endpoint = knownResources(app.config).mcp
  const schema = { hide: true }
  // Discovery documents: public, and read by browser-based clients from their own origin (lib/open-cors.ts).
  const discovery = { schema, onSend: anyOrigin }

  app.get('/catalog.json', { schema: { ...schema, response: { 200: Catalog } } }, async () => ({
    name: SERVER_NAME,
    version: VERSION,
    // `revision` as first specified (the session revision, docs/rules.md); `revisions`, every one /mcp speaks.
    protocol: { name: 'mcp' as const, revision: SESSION_REVISION, revisions: [...PROTOCOL_REVISIONS] },
    endpoint,
    tools: app.mcp.tools.map(t => ({ ...describeTool(t), requiredScopes: t.requiredScopes })),
    resources: app.mcp.resources.map(describeResource)
  }))

  const agentCard = () => ({
    name: SERVER_NAME,
    description: DESCRIPTION,
    url: endpoint,
    version: VERSION,
    // The card describes the capabilities; `url` is the MCP endpoint, which speaks MCP, not A2A's own JSON-RPC.
    protocolVersion: '0.3.0',
    provider: { organization: 'marketplace-gateway', url: publicBaseUrl },
    documentationUrl: `${publicBaseUrl}/docs`,
    capabilities: {
      streaming: true,
      pushNotifications: false,
      stateTransitionHistory: false,
      // The MCP revisions `url` speaks, as A2A extensions (AgentExtension: uri, description, required).
      extensions: PROTOCOL_REVISIONS.map(revision => ({
        uri: `https://modelcontextprotocol.io/specification/${revision}`,
        description: `MCP revision ${revision} at url (${revision === SESSION_REVISION ? 'sessions' : 'stateless'}).`,
        required: false
      }))
    },
    securitySchemes: { accessToken: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
    security: [{ accessToken: [] }],
    defaultInputModes: ['application/json'],
    defaultOutputModes: ['application/json'],
    skills: app.mcp.tools.map(t => ({ id: t.name, name: t.title, description: t.description, tags: t.tags }))
  })
  app.get('/.well-known/agent.json', { schema }, async () => agentCard())
  app.get('/.well-known/agent-card.json', { schema }, async () => agentCard())

  // RFC 9728: where an MCP client learns how to get a token for /mcp. The path form (the resource's path after
  // the well-known prefix) is what MCP clients try first; the root form is kept for older ones.
  const protectedResource = {
    resource: endpoint,
    authorization_servers: [publicBaseUrl],
    bearer_methods_supported: ['header'],
    // Only scopes that authorise something: clients ask for what is listed here.
    scopes_supported: Object.keys(WIRED_SCOPES),
    resource_name: 'Marketplace gateway MCP endpoint',
    resource_documentation: `${publicBaseUrl}/docs`
  }
  for (const path of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']) {
    app.get(path, discovery, async () => protectedResource)
    preflight(app, path, 'GET')
  }

  // RFC 8414: the authorization server behind the access tokens.
  preflight(app, '/.well-known/oauth-authorization-server', 'GET')
  app.get('/.well-known/oauth-authorization-server', discovery, async () => ({
    issuer: publicBaseUrl,
    authorization_endpoint: `${publicBaseUrl}/oauth/authorize`,
    token_endpoint: `${publicBaseUrl}/oauth/token`,
    revocation_endpoint: `${publicBaseUrl}/oauth/revoke`,
    jwks_uri: `${publicBaseUrl}/.well-known/jwks.json`,
    response_types_supported: ['code'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    registration_endpoint: `${publicBaseUrl}/oauth/register`,
    // A client_id may be the https URL of the client's metadata document (plugins/domain/oauth/client-metadata.ts).
    client_id_metadata_document_supported: true,
    // `none`: public clients (Dynamic Client Registration with no secret, metadata documents), PKCE only.
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    revocation_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    // As in the protected resource metadata: what clients ask for when they do not know better.
    scopes_supported: Object.keys(WIRED_SCOPES),
    authorization_response_iss_parameter_supported: true,
    service_documentation: `${publicBaseUrl}/docs`
  }))
}

export default catalog
