import { Type, type Static } from '@sinclair/typebox'
import { SAMPLE } from './examples.js'

/** GET /public/v1/me, in snake_case (docs/rules.md#public-routes). */
export const Identity = Type.Object(
  {
    install_id: Type.String(),
    client_id: Type.String(),
    app_slug: Type.String(),
    org_ref_id: Type.String(),
    entity_ref_id: Type.String(),
    scopes: Type.Array(Type.String(), {
      description: 'Scopes granted at install consent, as the service holds them now.'
    })
  },
  {
    $id: 'Identity',
    title: 'Identity',
    description: 'The install the access token acts for.',
    additionalProperties: false,
    examples: [{
      install_id: SAMPLE.installId,
      client_id: SAMPLE.clientId,
      app_slug: SAMPLE.appSlug,
      org_ref_id: SAMPLE.orgId,
      entity_ref_id: SAMPLE.entityId,
      scopes: ['invoices:read', 'bills:read']
    }]
  }
)
// eslint-disable-next-line @typescript-eslint/no-redeclare -- TypeBox: a schema and its Static type share a name
export type Identity = Static<typeof Identity>

/** The tenant prefix of every tenant-scoped route. */
export const TenantParams = Type.Object({
  orgId: Type.String({ description: "Must equal the token's org_ref_id.", examples: [SAMPLE.orgId] }),
  entityId: Type.String({ description: "Must equal the token's entity_ref_id.", examples: [SAMPLE.entityId] })
})
