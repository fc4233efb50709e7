import type { FastifyReply } from 'fastify'

/**
 * Sends JSON text as it is: Fastify serializes only what is not a string already. For the routes whose services
 * answer the wire text (records, reports); the type provider knows only the object shape of the response schema,
 * which documents what this text is.
 */
export const sendJson = (reply: FastifyReply, json: string) =>
  reply.type('application/json; charset=utf-8').send(json)
