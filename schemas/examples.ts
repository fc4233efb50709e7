/**
 * Sample values of the OpenAPI examples, in the formats the service generates, so that every example in the
 * document reads like one real install (and Spectral checks each against its schema).
 */
export const SAMPLE = {
  orgId: 'org_demo',
  entityId: 'ent_demo',
  clientId: 'app_Qm3xT9vL2pKa8wZr',
  clientSecret: 'mgs_QFK-2cTojKawSdS8230-wG-GLZ8ty1_trduXTabdxc4',
  installId: 'ins_Vb7KpX2mQ9wLr4Tz',
  subscriptionId: 'whs_N4rT8kLp2QzX7vWm',
  eventId: 'evt_3kT9mQ2xV7pLr8ZwN4bY1c',
  deliveryId: 'dlv_6f1c2a9e8b7d4c3fa0e1b2c3d4e5f607',
  attemptId: 'att_0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e',
  appSlug: 'acme-invoicing',
  redirectUri: 'https://acme.example/oauth/callback',
  targetUrl: 'https://hooks.acme.example/marketplace',
  signingSecret: 'whsec_lowleKIq3QJ94f1WU6zL6ywNZFh1B2ncpnaIeble5KQ=',
  refreshToken: 'mrt_JeeBPywMxKKRwRq2whjyMgOMcrzmIze3P_qMJmzfhK0',
  code: 'mac_4wHHu_F-yZlkvHbLRX4eWFI9bShrdSuVCNjVYkIXChc',
  at: '2026-11-24T09:30:00.000Z'
} as const
