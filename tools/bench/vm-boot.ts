// `npm run bench`: the node image as a VM (libs/machines, provider qemu). Prints whether KVM works
// here (probeKvm's answer and why), the image build cold (into a new directory) and warm (the
// cache), a VM's boot from power-on until its guest agent answers (systemd's start from the serial
// console), QEMU's and swtpm's memory, and a VM worker in `mini up` (one namespace control plane,
// one VM worker) from the command's start to every node Ready, with the VM's boot phases. With KVM
// where the probe says it works, else software emulation (TCG). Next to it, the same machine's
// `node -e 0` as an anchor. Prints figures; asserts nothing.
import { spawnSync } from 'node:child_process';
import { readFile, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createVmMachine, openMachineAt, probeKvm } from '@constellation/machines';
import { createEkCa, manufactureTpm } from '@constellation/swtpm';
import { createTempDir, repoRoot, runCommand } from '@constellation/testing';
import { rssMiB } from './process-memory.js';

const root = repoRoot();
const cli = join(root, 'apps/cli/dist/constellation.mjs');

function timed<T>(run: () => T): [T, number] {
  const started = performance.now();
  const result = run();
  return [result, (performance.now() - started) / 1000];
}

/** mini's preparation (programs, the node image trusting mini's vendor): KUBERNETES_BIN_DIR and NODE_IMAGE. */
function prepare(): { kubernetesBinDir: string; nodeImage: string } {
  const prepared = spawnSync('bash', [join(root, 'tools/dev/mini-prepare.sh'), '--node-image'], {
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
  });
  const value = (key: string): string => new RegExp(`^${key}=(.+)$`, 'm').exec(prepared.stdout)?.[1] ?? '';
  if (prepared.status !== 0 || value('NODE_IMAGE') === '')
    throw new Error('tools/dev/mini-prepare.sh failed (see above)');
  return { kubernetesBinDir: value('KUBERNETES_BIN_DIR'), nodeImage: value('NODE_IMAGE') };
}

/** The node image build as mini-prepare runs it (same recipe), into `output` (always builds) or the cache. */
function buildImage(output?: string): string {
  const trust = spawnSync(process.execPath, [cli, 'mini', 'vendor', '--image-options'], { encoding: 'utf8' });
  const built = spawnSync(
    process.execPath,
    [
      '--conditions=@constellation/source',
      '--import',
      'tsx',
      join(root, 'tools/node-image/build-node-image.ts'),
      '--guest-agent',
      ...trust.stdout.trim().split('\n'),
      ...(output === undefined ? [] : ['--output', output]),
    ],
    { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' },
  );
  if (built.status !== 0) throw new Error('building the node image failed (see above)');
  return built.stdout.trim().split('\n').at(-1) ?? '';
}

const [, nodeSeconds] = timed(() => spawnSync(process.execPath, ['-e', '0']));
const kvm = await probeKvm();
console.log(`\nVMs: ${kvm.accel === 'kvm' ? 'KVM' : 'software emulation (TCG)'}: ${kvm.reason}`);
console.log(`anchor: node -e 0 ${(nodeSeconds * 1000).toFixed(0)} ms`);
const { kubernetesBinDir, nodeImage } = prepare();

const dir = await createTempDir('bench-vm-');
try {
  const [, coldSeconds] = timed(() => buildImage(join(dir.path, 'cold-image')));
  const [, warmSeconds] = timed(() => buildImage());
  console.log(
    `node image build: cold ${coldSeconds.toFixed(1)} s (a new directory), warm ${warmSeconds.toFixed(1)} s (the recipe cached)`,
  );

  const ca = await createEkCa(join(dir.path, 'ek-ca'), { name: 'bench' });
  const machineDir = join(dir.path, 'vm');
  await manufactureTpm({ stateDir: join(machineDir, 'tpm'), vmid: 'vm', ca });
  const state = join(dir.path, 'state.img');
  await writeFile(state, '');
  await truncate(state, 64 * 1024 * 1024);
  const machine = await createVmMachine({
    name: 'vm',
    dir: machineDir,
    accel: kvm.accel,
    disks: [
      { file: join(nodeImage, 'esp.img'), serial: 'esp', readOnly: true, format: 'raw' },
      { file: join(nodeImage, 'root.img'), serial: 'root', readOnly: true, format: 'raw' },
      { file: join(nodeImage, 'root.verity'), serial: 'verity', readOnly: true, format: 'raw' },
      { file: state, serial: 'state', readOnly: false, format: 'raw' },
    ],
  });
  try {
    const started = performance.now();
    await machine.boot();
    const deadline = Date.now() + 10 * 60_000;
    let answered = false;
    while (!answered && Date.now() < deadline) {
      answered = await machine.exec(['true'], { timeoutMs: 5_000 }).then(
        () => true,
        () => false,
      );
      if (!answered) await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
    const bootSeconds = (performance.now() - started) / 1000;
    const serial = await readFile(machine.logPath(), 'utf8');
    // Kernel timestamps: "[    1.234] …", seconds since the kernel started.
    const line = serial.split('\n').find((l) => /systemd\[1\]: systemd \d+/.test(l));
    const systemd = line === undefined ? undefined : /^\[\s*(\d+\.\d+)\]/.exec(line)?.[1];
    const finished = /Startup finished in ([^\n]+)/.exec(serial)?.[1];
    console.log(
      `VM power-on to guest agent (${kvm.accel})  ${answered ? `${bootSeconds.toFixed(1)} s` : 'NOT UP in 10 min'}` +
        `; systemd started ${systemd === undefined ? '?' : `${Number(systemd).toFixed(1)} s`} after the kernel${finished === undefined ? '' : `; systemd: startup finished in ${finished}`}`,
    );
    console.log(
      `memory: QEMU + swtpm RSS ${(await rssMiB(await machine.hostProcesses())).toFixed(0)} MiB (1024 MiB guest${kvm.accel === 'tcg' ? ', tb-size 256' : ''})`,
    );
  } finally {
    await machine.destroy();
  }

  // A VM worker in a mini cluster: from `mini up` to every node Ready, as a user runs it.
  const workspace = join(dir.path, 'workspace');
  const started = performance.now();
  const up = await runCommand(
    process.execPath,
    [
      cli,
      '--workspace',
      workspace,
      'mini',
      'up',
      '--kubernetes-bin-dir',
      kubernetesBinDir,
      '--workers',
      '0',
      '--vm-workers',
      '1',
      '--node-image',
      nodeImage,
    ],
    { timeoutMs: 45 * 60_000 },
  );
  try {
    const seconds = (performance.now() - started) / 1000;
    const output = up.stderr;
    if (up.code !== 0) {
      console.log(`mini up, 1 control plane + 1 VM worker: FAILED (${output.trim().split('\n').at(-1) ?? ''})`);
    } else {
      console.log(`mini up, 1 control plane + 1 VM worker, to every node Ready: ${seconds.toFixed(1)} s`);
      const phases = [...output.matchAll(/vm-worker-1: boot phase (\S+) \((\d+) s\)/g)].map(
        ([, phase, at]) => `${phase ?? '?'} ${at ?? '?'} s`,
      );
      console.log(`  the VM's boot phases after power-on: ${phases.join(', ')}`);
      const vm = await openMachineAt(join(workspace, 'constellation-mini', 'vm-worker-1'));
      if (vm !== undefined)
        console.log(
          `  the VM worker's QEMU + swtpm RSS, Ready: ${(await rssMiB(await vm.hostProcesses())).toFixed(0)} MiB (2048 MiB guest)`,
        );
    }
  } finally {
    await runCommand(process.execPath, [cli, '--workspace', workspace, 'mini', 'down'], { timeoutMs: 600_000 });
  }
} finally {
  await dir.remove();
}
