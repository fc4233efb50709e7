import t from 'tap'
import { GatewayServer } from '../../../../../plugins/domain/mcp/server.js'

t.test('resume leaves a server as the session\'s initialize left the one that opened it', async t => {
  const session = {
    protocolVersion: '2025-06-18',
    clientInfo: { name: 'inspector', version: '0.17.0' },
    clientCapabilities: { roots: { listChanged: true }, elicitation: {} }
  }
  const server = new GatewayServer({ name: 'test', version: '1' }, { capabilities: { tools: {} } })
  t.equal(server.getNegotiatedProtocolVersion(), undefined, 'a new server knows no session')
  server.resume(session)
  t.equal(server.getNegotiatedProtocolVersion(), '2025-06-18')
  t.same(server.getClientVersion(), session.clientInfo)
  t.same(server.getClientCapabilities(), session.clientCapabilities)
})
