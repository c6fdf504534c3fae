#!/usr/bin/env node
// `constellation` in a checkout (`npx constellation`): runs the bundle that `npm run mini` or
// `npm run build` makes. Committed so that npm links the command at install time, before any build.
import { existsSync } from 'node:fs';

const bundle = new URL('../dist/constellation.mjs', import.meta.url);
if (!existsSync(bundle)) {
  process.stderr.write(
    'constellation is not built yet: run `npm run mini` (or `npm run build`) in the repository first\n',
  );
  process.exit(1);
}
await import(bundle.href);
