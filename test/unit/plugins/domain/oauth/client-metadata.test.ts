import t from 'tap'
import { isMetadataUrl } from '../../../../../plugins/domain/oauth/client-metadata.js'

t.test('a client_id names a metadata document when it is an https URL with a path', async t => {
  for (const id of ['https://app.example/client.json', 'https://app.example/oauth/client', 'https://app.example:8443/c',
    'https://app.example/c?v=1']) {
    t.ok(isMetadataUrl(id), id)
  }
  for (const id of ['https://app.example', 'https://app.example/', 'http://app.example/client.json',
    'HTTPS://app.example/client.json', 'https://app.example/c#frag', 'https://user@app.example/c',
    'https://u:p@app.example/c', 'mga_0123456789', '', 'https://', 'cursor://app/c']) {
    t.notOk(isMetadataUrl(id), JSON.stringify(id))
  }
})
