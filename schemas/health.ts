import { Type } from '@sinclair/typebox'

export const Health = Type.Object({
  status: Type.Literal('ok'),
  version: Type.String(),
  active_sessions: Type.Integer({ description: 'Open MCP sessions on this instance.' }),
  uptime_s: Type.Integer()
}, {
  title: 'Health',
  description: 'The process is alive.',
  examples: [{ status: 'ok', version: '0.7.0', active_sessions: 3, uptime_s: 86400 }]
})

export const Readiness = Type.Object({
  status: Type.Union([Type.Literal('ready'), Type.Literal('unavailable')]),
  database: Type.Union([Type.Literal('ok'), Type.Literal('unavailable'), Type.Literal('unknown')], {
    description: 'unknown while shutting down: the database is not asked then.'
  }),
  shutting_down: Type.Boolean()
}, {
  title: 'Readiness',
  description: 'Ready for traffic.',
  examples: [{ status: 'ready', database: 'ok', shutting_down: false }]
})
