#!/usr/bin/env node
// Bundles one app into a single ESM file for the node image (or for `mini`), resolving our
// packages to their TypeScript sources. Usage: node tools/build/bundle.mjs <entry.ts> <out.mjs>
import { build } from 'esbuild';
import { chmod } from 'node:fs/promises';

const [entry, outfile] = process.argv.slice(2);
if (entry === undefined || outfile === undefined) {
  process.stderr.write('usage: bundle.mjs <entry.ts> <out.mjs>\n');
  process.exit(2);
}

await build({
  entryPoints: [entry],
  outfile,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  conditions: ['@constellation/source'],
  sourcemap: 'linked',
  legalComments: 'none',
  logLevel: 'warning',
  // Some dependencies are CommonJS and call require() for Node built-ins.
  banner: {
    js: "#!/usr/bin/env node\nimport { createRequire as __createRequire } from 'node:module';\nconst require = __createRequire(import.meta.url);",
  },
});
await chmod(outfile, 0o755);
