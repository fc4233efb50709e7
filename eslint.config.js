// Lint configuration: neostandard (the style the Fastify organisation uses) with its TypeScript rules,
// plus one house rule, the 120-column line length. See docs/tooling.md.
import neostandard from 'neostandard'

export default [
  ...neostandard({
    ts: true, // parse and check **/*.ts with typescript-eslint, beside the plain-JS files
    noJsx: true, // no .jsx/.tsx here; skips the React rules
    // test/typed-client/api.d.ts is what openapi-typescript generates in test/typed-client.test.ts (not committed).
    ignores: ['dist', 'node_modules', 'coverage', '.tap', 'data', 'bench/results', 'test/typed-client/api.d.ts']
  }),
  {
    name: 'house/type-members',
    rules: {
      // The codebase's own style for type literals, kept from before the linter: `{ a: string, b: number }` on one
      // line, one member per line without delimiters otherwise (neostandard leaves this open).
      '@stylistic/member-delimiter-style': ['error', {
        multiline: { delimiter: 'none' },
        singleline: { delimiter: 'comma', requireLast: false }
      }]
    }
  },
  {
    name: 'house/line-length',
    rules: {
      // The plugin is the copy neostandard registers; package.json pins the same version.
      '@stylistic/max-len': ['error', {
        code: 120,
        tabWidth: 2,
        ignoreUrls: true,
        ignoreComments: false,
        ignoreStrings: false,
        ignoreTemplateLiterals: false,
        ignoreRegExpLiterals: false
      }]
    }
  }
]
