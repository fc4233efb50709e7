/** Scopes that authorise routes today, with the plain words the consent page shows. */
export const WIRED_SCOPES: Record<string, string> = {
  'invoices:read': 'Read your invoices',
  'bills:read': 'Read your bills',
  'customers:read': 'Read your customers'
}

const PLANNED_RESOURCES: Record<string, string> = {
  bom: 'bills of materials',
  workOrder: 'work orders',
  recipe: 'recipes',
  qualityInspection: 'quality inspections',
  subcontractOrder: 'subcontract orders'
}
const VERBS: Record<string, string> = { read: 'Read', create: 'Create', update: 'Update', delete: 'Delete' }

/** Planned scopes (docs/rules.md#scopes): they may be registered and granted but authorise no route yet. */
export const PLANNED_SCOPES: Record<string, string> = {
  ...Object.fromEntries(Object.entries(PLANNED_RESOURCES).flatMap(([resource, words]) =>
    Object.entries(VERBS).map(([verb, verbWords]) => [`${resource}:${verb}`, `${verbWords} your ${words}`]))),
  'manufacturingReport:read': 'Read your manufacturing reports'
}

export const KNOWN_SCOPES: Record<string, string> = { ...WIRED_SCOPES, ...PLANNED_SCOPES }

export function isKnownScope (scope: string): boolean {
  return Object.hasOwn(KNOWN_SCOPES, scope)
}

export function describeScope (scope: string): string {
  return KNOWN_SCOPES[scope] ?? scope
}
