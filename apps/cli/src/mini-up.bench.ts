// `npm run bench`: wall time of `constellation mini up` until every node joined, for 1+2 and 1+8
// nodes, using the built CLI exactly as a user runs it. Prints figures; asserts nothing.
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { buildBundles, createTempDir, repoRoot, runCommand } from '@constellation/testing';

const root = repoRoot();
await buildBundles(
  ['@constellation/cli', '@constellation/bootstrapper', '@constellation/joinservice', '@constellation/sandbox'],
  300_000,
);
const cli = join(root, 'apps/cli/dist/constellation.mjs');
console.log('\nconstellation mini up, wall time until every node joined');
for (const workers of [2, 8]) {
  const workspace = await createTempDir('constellation-bench-mini-');
  try {
    const started = performance.now();
    const up = await runCommand(
      process.execPath,
      [cli, '--workspace', workspace.path, 'mini', 'up', '--workers', String(workers)],
      { timeoutMs: 600_000 },
    );
    const seconds = (performance.now() - started) / 1000;
    console.log(
      `1 control plane + ${String(workers).padEnd(2)} workers  ${up.code === 0 ? `${seconds.toFixed(1)} s` : `FAILED (${up.stderr.trim().split('\n').at(-1) ?? ''})`}`,
    );
  } finally {
    await runCommand(process.execPath, [cli, '--workspace', workspace.path, 'mini', 'down'], { timeoutMs: 120_000 });
    await workspace.remove();
  }
}
