// `--url <base_url>` of the commands that call the service (cli/base-url.ts): an http(s) URL, or a usage error that
// says so, never a request that fails as if the service were down.
import { InvalidArgumentError } from 'commander'
import t from 'tap'
import { baseUrl } from '../../../cli/base-url.js'

t.test('http:// and https:// URLs are taken as written', async t => {
  for (const url of ['http://127.0.0.1:3000', 'https://gw.example', 'HTTP://localhost:4000/', 'http://[::1]:3000',
    'https://gw.example/prefix']) {
    t.equal(baseUrl(url), url)
  }
})

t.test('anything else is refused naming the missing scheme, with the URL meant when it is plain', async t => {
  const cases: Array<[string, string]> = [
    ['localhost:3000', 'Not a URL starting with http:// or https:// (did you mean http://localhost:3000?).'],
    ['127.0.0.1:4000', 'Not a URL starting with http:// or https:// (did you mean http://127.0.0.1:4000?).'],
    ['gw.example/prefix', 'Not a URL starting with http:// or https:// (did you mean http://gw.example/prefix?).'],
    ['ftp://gw.example', 'Not a URL starting with http:// or https://.'],
    ['http:/localhost:3000', 'Not a URL starting with http:// or https://.'],
    ['', 'Not a URL starting with http:// or https://.']
  ]
  for (const [value, message] of cases) {
    t.throws(() => baseUrl(value), new InvalidArgumentError(message), JSON.stringify(value))
  }
})
