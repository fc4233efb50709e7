import type { Test } from 'tap'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { bearer } from './helper.js'

/**
 * An MCP SDK client connected over real HTTP to `<base>/mcp` with an install's token, closed when the test ends; the
 * tools are listed first, as agents do (the SDK then checks every structuredContent against the tool's output
 * schema).
 */
export async function connectWithToken (t: Test, base: string, token: string): Promise<Client> {
  const client = new Client({ name: 'tap', version: '1.0.0' })
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
    requestInit: { headers: bearer(token) }
  }))
  t.teardown(() => client.close())
  await client.listTools()
  return client
}
