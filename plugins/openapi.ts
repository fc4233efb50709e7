import fp from 'fastify-plugin'
import swagger from '@fastify/swagger'
import { VERSION } from '../lib/root.js'
import { WIRED_SCOPES } from '../lib/scopes.js'

/**
 * OpenAPI 3.1, generated from the route schemas (the same TypeBox schemas that validate and serialize).
 * Internal user routes are documented in docs/, not here: this document is for app developers.
 */
export default fp(async (app) => {
  const base = app.config.publicBaseUrl
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Marketplace public API',
        version: VERSION,
        description: 'The API through which an installed marketplace app acts on one tenant (organisation and entity) of the accounting system. ' +
          'Every `/public/v1` request carries the install\'s access token. Errors are JSON objects with `error` and `message`.'
      },
      servers: [{ url: base }],
      tags: [
        { name: 'identity' }, { name: 'accounting' }, { name: 'webhooks' }, { name: 'oauth' }, { name: 'operations' }
      ],
      components: {
        securitySchemes: {
          accessToken: {
            type: 'http',
            scheme: 'bearer',
            bearerFormat: 'JWT',
            description: `Access token (RS256, typ at+jwt, aud marketplace_app) from ${base}/oauth/token. Scopes: ${Object.keys(WIRED_SCOPES).join(', ')}.`
          },
          clientCredentials: { type: 'http', scheme: 'basic', description: 'client_id and client_secret of the app (or in the form body).' }
        }
      }
    },
    hideUntagged: false,
    transform: ({ schema, url }) => {
      const internal = /^\/(apps|orgs|installs|docs|mcp|events)(\/|$)/.test(url) || url === '/public/v1/openapi.json'
      return { schema: internal ? { ...schema, hide: true } : schema, url }
    }
  })
}, { name: 'openapi', dependencies: ['config'] })
