// `npm run bench`: the node image as a VM (libs/machines, provider qemu). Prints the image build's
// time (cached, as every run after the first on a machine), a boot's phases from power-on until the
// guest agent answers (OVMF and the kernel's start from the serial console's first kernel line,
// systemd's start), and QEMU's and swtpm's memory. With software emulation (TCG) here: /dev/kvm
// on these machines cannot run OVMF. Next to it, the same machine's `node -e 0` as an anchor.
// Prints figures; asserts nothing.
import { spawnSync } from 'node:child_process';
import { readFile, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createVmMachine } from '@constellation/machines';
import { createEkCa, manufactureTpm } from '@constellation/swtpm';
import { createTempDir, repoRoot } from '@constellation/testing';

const root = repoRoot();

function timed<T>(run: () => T): [T, number] {
  const started = performance.now();
  const result = run();
  return [result, (performance.now() - started) / 1000];
}

const [image, buildSeconds] = timed(() => {
  const built = spawnSync(
    process.execPath,
    [
      '--conditions=@constellation/source',
      '--import',
      'tsx',
      join(root, 'tools/node-image/build-node-image.ts'),
      '--guest-agent',
    ],
    { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' },
  );
  if (built.status !== 0) throw new Error('building the node image failed (see above)');
  return built.stdout.trim().split('\n').at(-1) ?? '';
});
const [, nodeSeconds] = timed(() => spawnSync(process.execPath, ['-e', '0']));

const dir = await createTempDir('bench-vm-');
try {
  const ca = await createEkCa(join(dir.path, 'ek-ca'), { name: 'bench' });
  const machineDir = join(dir.path, 'vm');
  await manufactureTpm({ stateDir: join(machineDir, 'tpm'), vmid: 'vm', ca });
  const state = join(dir.path, 'state.img');
  await writeFile(state, '');
  await truncate(state, 64 * 1024 * 1024);
  const machine = await createVmMachine({
    name: 'vm',
    dir: machineDir,
    disks: [
      { file: join(image, 'esp.img'), serial: 'esp', readOnly: true, format: 'raw' },
      { file: join(image, 'root.img'), serial: 'root', readOnly: true, format: 'raw' },
      { file: join(image, 'root.verity'), serial: 'verity', readOnly: true, format: 'raw' },
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
    const at = (pattern: RegExp): number | undefined => {
      const line = serial.split('\n').find((l) => pattern.test(l));
      const stamp = line === undefined ? undefined : /^\[\s*(\d+\.\d+)\]/.exec(line)?.[1];
      return stamp === undefined ? undefined : Number(stamp);
    };
    const systemd = at(/systemd\[1\]: systemd \d+/);
    const finished = /Startup finished in ([^\n]+)/.exec(serial)?.[1];
    let rss = 0;
    for (const pid of await machine.hostProcesses()) {
      const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
      rss += Number(/^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1] ?? 0) / 1024;
    }
    console.log(
      `node image build (cached)           ${buildSeconds.toFixed(1)} s   (anchor: node -e 0 ${(nodeSeconds * 1000).toFixed(0)} ms)`,
    );
    console.log(
      `VM power-on to guest agent (TCG)    ${answered ? `${bootSeconds.toFixed(1)} s` : 'NOT UP in 10 min'}` +
        `; systemd started ${systemd === undefined ? '?' : `${systemd.toFixed(1)} s`} after the kernel; ${finished === undefined ? '' : `systemd: startup finished in ${finished}`}`,
    );
    console.log(`memory: QEMU + swtpm RSS ${rss.toFixed(0)} MiB (1024 MiB guest, tb-size 256)`);
  } finally {
    await machine.destroy();
  }
} finally {
  await dir.remove();
}
