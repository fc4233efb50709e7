// Child processes in tests: the service's own as users start them (`npm start` is `node dist/cli.js serve`;
// `npm test` builds first, package.json `pretest`), and every child without tap's process-info hook.
//
// tap loads a hook (@tapjs/processinfo, through process-on-spawn) that puts its `--import` into NODE_OPTIONS of
// every process the tests spawn, whatever environment the spawn passes, for coverage of child processes. Each node
// started with it spent about 0.6 s more CPU (a loader thread and its hooks), and the README's steps alone start
// 800. `env -u NODE_OPTIONS` takes it out again in the child itself. Children are not
// counted in the coverage (docs/tooling.md#coverage-c8).
import { join } from 'node:path'
import { ROOT } from '../../lib/root.js'

/** `command …args` as spawn's file and arguments, without tap's hook in NODE_OPTIONS. */
export const untapped = (command: string, ...args: string[]): [string, string[]] =>
  ['env', ['-u', 'NODE_OPTIONS', command, ...args]]

/** `node dist/cli.js …args`, the built command line, as spawn's file and arguments. */
export const cli = (...args: string[]): [string, string[]] =>
  untapped(process.execPath, join(ROOT, 'dist', 'cli.js'), ...args)
