import { Type } from '@sinclair/typebox'

/** The install record: camelCase, but a capital `Status`, on purpose (docs/rules.md#installs). */
export const InstallRecord = Type.Object({
  installId: Type.String(),
  clientId: Type.String(),
  appSlug: Type.String(),
  orgRefId: Type.String(),
  entityRefId: Type.String(),
  scopes: Type.Array(Type.String()),
  Status: Type.Union([Type.Literal('active'), Type.Literal('uninstalled')]),
  createdAt: Type.String({ format: 'date-time' }),
  uninstalledAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()])
}, { additionalProperties: false })

export const InstallListing = Type.Object({ installs: Type.Array(InstallRecord) })
export const InstallParams = Type.Object({ installId: Type.String() })
