// `npm run bench`: wall time of `constellation mini up` on real nodes until every node is Ready
// (EK provisioning, containerd, real kubeadm init and joins included), for the sizes the project's
// goals name, using the built CLI exactly as a user runs it, each followed by `mini down`. Next to
// it, the same run's `kubeadm init` alone (the init node's step, as init reports it) and the
// memory of each node (RSS of its units, shims and pods). Prints figures; asserts nothing.
import { spawnSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { openMachineAt } from '@constellation/machines';
import { buildBundles, createTempDir, repoRoot, runCommand } from '@constellation/testing';
import { rssMiB } from './process-memory.js';

const SIZES: { controlPlanes: number; workers: number; goalSeconds?: number }[] = [
  { controlPlanes: 1, workers: 2, goalSeconds: 40 },
  { controlPlanes: 1, workers: 8, goalSeconds: 90 },
];

const root = repoRoot();
await buildBundles(['@constellation/cli', '@constellation/bootstrapper', '@constellation/joinservice'], 300_000);
const image = await runCommand('npm', ['run', 'image'], { cwd: root, timeoutMs: 300_000 });
if (image.code !== 0) throw new Error(`npm run image failed:\n${image.stderr}`);
const cli = join(root, 'apps/cli/dist/constellation.mjs');
/** A build script's output directory (it builds what is missing first, with progress on stderr). */
function built(script: string): string {
  const result = spawnSync(process.execPath, [join(root, script)], {
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
  });
  if (result.status !== 0) throw new Error(`${script} failed (see above)`);
  return result.stdout.trim();
}
const kubernetesBinDir = built('tools/kubernetes/build.mjs');
built('tools/kubernetes/images.mjs');

console.log('\nconstellation mini up on real nodes, wall time until every node is Ready');
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
      { timeoutMs: 900_000 },
    );
    const seconds = (performance.now() - started) / 1000;
    const figure = up.code === 0 ? `${seconds.toFixed(1)} s` : `FAILED (${up.stderr.trim().split('\n').at(-1) ?? ''})`;
    const goal = goalSeconds === undefined ? '' : ` (goal <= ${goalSeconds} s)`;
    const kubeadmInit = /init: {3}✓ kubeadm init \((\d+) ms\)/.exec(up.stderr)?.[1];
    console.log(`${controlPlanes} control plane + ${String(workers).padEnd(2)} workers  ${figure}${goal}`);
    if (kubeadmInit !== undefined)
      console.log(`  of which kubeadm init on the first control plane: ${(Number(kubeadmInit) / 1000).toFixed(1)} s`);
    if (up.code === 0) {
      const state = JSON.parse(await readFile(join(workspace.path, 'constellation-mini', 'mini.json'), 'utf8')) as {
        nodes: { name: string; dir: string }[];
      };
      const memory: string[] = [];
      for (const node of state.nodes) {
        const machine = await openMachineAt(node.dir);
        if (machine !== undefined)
          memory.push(`${node.name} ${(await rssMiB(await machine.hostProcesses())).toFixed(0)} MiB`);
      }
      console.log(`  RSS per node (units, shims, pods, TPM): ${memory.join(', ')}`);
    }
  } finally {
    await runCommand(process.execPath, [cli, '--workspace', workspace.path, 'mini', 'down'], { timeoutMs: 300_000 });
    await workspace.remove();
  }
}
