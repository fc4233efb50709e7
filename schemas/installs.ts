import { Type } from '@sinclair/typebox'
import { SAMPLE } from './examples.js'

/** The install record: camelCase, but a capital `Status`, on purpose (docs/rules.md#installs). */
export const InstallRecord = Type.Object({
  installId: Type.String(),
  clientId: Type.String(),
  appSlug: Type.String(),
  appName: Type.String({ description: 'The app\'s name, as its consent page shows it.' }),
  apiKeyEnabled: Type.Boolean({
    description: 'Whether the app\'s API key is enabled now. While it is disabled every token of the install is ' +
      'refused (401 `invalid_client`), whatever `Status` says: `Status` is the install\'s own state, which only an ' +
      'uninstall changes.'
  }),
  orgRefId: Type.String(),
  entityRefId: Type.String(),
  scopes: Type.Array(Type.String()),
  Status: Type.Union([Type.Literal('active'), Type.Literal('uninstalled')]),
  createdAt: Type.String({ format: 'date-time' }),
  uninstalledAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()])
}, { title: 'Install', additionalProperties: false })

const installSample = {
  installId: SAMPLE.installId,
  clientId: SAMPLE.clientId,
  appSlug: SAMPLE.appSlug,
  appName: 'Acme Invoicing',
  apiKeyEnabled: true,
  orgRefId: SAMPLE.orgId,
  entityRefId: SAMPLE.entityId,
  scopes: ['invoices:read', 'bills:read'],
  Status: 'active',
  createdAt: SAMPLE.at,
  uninstalledAt: null
}
export const UninstalledRecord = Type.Object(InstallRecord.properties, {
  title: 'Install',
  description: 'The install, uninstalled now.',
  additionalProperties: false,
  examples: [{ ...installSample, Status: 'uninstalled', uninstalledAt: '2026-11-24T10:05:00.000Z' }]
})
export const InstallListing = Type.Object({ installs: Type.Array(InstallRecord) }, {
  title: 'InstallListing',
  description: 'The installs of the entity.',
  examples: [{ installs: [installSample] }]
})
// No example: none works but an install of the caller's organisation.
export const InstallParams = Type.Object({
  installId: Type.String({ description: 'The install\'s `installId`, from the installs of an entity.' })
})
