// The build scripts are TypeScript (build.ts, images.ts, conformance-build.ts); the commands
// people and scripts type stay `node tools/kubernetes/<name>.mjs`, each a launcher that runs its
// script with tsx and our packages resolved to their sources (no build of ours needed first).
import { spawnSync } from 'node:child_process';
import process from 'node:process';
import { URL, fileURLToPath } from 'node:url';

/** Runs `script` (beside this file) with this process's arguments, and exits with its status. */
export function launch(script) {
  const result = spawnSync(
    process.execPath,
    [
      '--conditions=@constellation/source',
      '--import',
      import.meta.resolve('tsx'),
      fileURLToPath(new URL(script, import.meta.url)),
      ...process.argv.slice(2),
    ],
    { stdio: 'inherit' },
  );
  if (result.error !== undefined) {
    process.stderr.write(`error: cannot run ${script}: ${result.error.message}\n`);
    process.exit(1);
  }
  process.exit(result.status ?? 1);
}
