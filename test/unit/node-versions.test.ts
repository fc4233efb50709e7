import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import semver from 'semver'
import t from 'tap'
import { ROOT } from '../../lib/root.js'

const read = (file: string): string => readFileSync(join(ROOT, file), 'utf8')
const supported = (JSON.parse(read('package.json')) as { engines: { node: string } }).engines.node

t.test('every installed package accepts every Node version the project supports', async t => {
  const lock = JSON.parse(read('package-lock.json')) as {
    packages: Record<string, { engines?: { node?: string } | string[] }>
  }
  const refusing = Object.entries(lock.packages)
    .map(([path, p]) => ({
      name: path.replace(/^.*node_modules\//, ''),
      range: Array.isArray(p.engines) ? undefined : p.engines?.node
    }))
    .filter((p): p is { name: string, range: string } => p.name !== '' && p.range !== undefined)
    .filter(p => !semver.subset(supported, p.range))
    .map(p => `${p.name} wants node ${p.range}`)
  // Such a package makes `npm install` warn EBADENGINE on part of the supported range (docs/tooling.md).
  t.same(refusing, [], `all accept ${supported}`)
})

t.test('the image and this machine run a supported Node', async t => {
  const image = /^ARG NODE_VERSION=(\d+)$/m.exec(read('Dockerfile'))?.[1]
  t.ok(image && semver.satisfies(`${image}.0.0`, supported), `the Dockerfile's Node ${image} is in ${supported}`)
  t.ok(semver.satisfies(process.version, supported), `${process.version} is in ${supported}`)
  // `^20.19.0 || ^22.13.0 || >=24` reads "Node 20.19+, 22.13+ or 24+".
  const said = supported.split('||').map(r => r.trim().replace(/^(\^|>=)/, '').replace(/\.0$/, '') + '+')
  t.match(read('README.md'), `Node ${said.slice(0, -1).join(', ')} or ${said.at(-1)}`, 'the README says the same')
})
