// `npm run bench`: wall time of `constellation mini up` until every node joined (EK provisioning
// included), for the sizes the project's goals name, using the built CLI exactly as a user runs
// it, each followed by `mini down`. Prints figures next to their goals; asserts nothing.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { buildBundles, createTempDir, repoRoot, runCommand } from '@constellation/testing';

const SIZES: { controlPlanes: number; workers: number; goalSeconds?: number }[] = [
  { controlPlanes: 1, workers: 2, goalSeconds: 8 },
  { controlPlanes: 1, workers: 8 },
  { controlPlanes: 3, workers: 8, goalSeconds: 20 },
];

const root = repoRoot();
await buildBundles(
  ['@constellation/cli', '@constellation/bootstrapper', '@constellation/joinservice', '@constellation/sandbox'],
  300_000,
);
const cli = join(root, 'apps/cli/dist/constellation.mjs');
// The control plane's programs: built (or found built) by tools/kubernetes/build.mjs, which prints their directory.
const build = spawnSync(process.execPath, [join(root, 'tools/kubernetes/build.mjs')], {
  stdio: ['ignore', 'pipe', 'inherit'],
  encoding: 'utf8',
});
if (build.status !== 0) throw new Error('building the Kubernetes programs failed (see above)');
const kubernetesBinDir = build.stdout.trim();
console.log('\nconstellation mini up, wall time until every node joined');
for (const { controlPlanes, workers, goalSeconds } of SIZES) {
  const workspace = await createTempDir('constellation-bench-mini-');
  try {
    const started = performance.now();
    const up = await runCommand(
      process.execPath,
      [
        cli,
        '--workspace',
        workspace.path,
        'mini',
        'up',
        '--kubernetes-bin-dir',
        kubernetesBinDir,
        '--control-planes',
        String(controlPlanes),
        '--workers',
        String(workers),
      ],
      { timeoutMs: 600_000 },
    );
    const seconds = (performance.now() - started) / 1000;
    const figure = up.code === 0 ? `${seconds.toFixed(1)} s` : `FAILED (${up.stderr.trim().split('\n').at(-1) ?? ''})`;
    const goal = goalSeconds === undefined ? '' : ` (goal <= ${goalSeconds} s)`;
    console.log(`${controlPlanes} control plane(s) + ${String(workers).padEnd(2)} workers  ${figure}${goal}`);
  } finally {
    await runCommand(process.execPath, [cli, '--workspace', workspace.path, 'mini', 'down'], { timeoutMs: 120_000 });
    await workspace.remove();
  }
}
