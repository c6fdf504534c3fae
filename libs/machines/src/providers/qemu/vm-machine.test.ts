// The node image booted as a VM (QEMU with OVMF and its own swtpm, software emulation here): the
// firmware's measurements equal the values computed from the image without booting it, the event
// log replays to them, and a root file system changed by one byte never boots. Slow (a boot takes
// about a minute under TCG): the image is built once per recipe (tools/node-image), then cached.
import { spawnSync } from 'node:child_process';
import { copyFile, open, readFile, rm, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifySignedMeasurements } from '@constellation/attestation';
import { checkEventPolicy, parseEventLog, replayEventLog } from '@constellation/eventlog';
import { predictUkiBoot } from '@constellation/measured-boot';
import { manufactureTpm } from '@constellation/swtpm';
import { createTempDir, repoRoot, useTestEkCa, waitFor } from '@constellation/testing';
import type { TempDir } from '@constellation/testing';
import type { Machine } from '../../machine.js';
import { createVmMachine } from './create-vm-machine.js';
import { vmPaths } from './vm-config.js';
import type { VmMachine } from './vm-machine.js';

/**
 * `npm run node-image -- --guest-agent` (the host runs programs in the guest: mini's VMs, never a
 * production image): built when this machine has none of its recipe, with progress on stderr.
 */
function nodeImageDir(): string {
  const built = spawnSync(
    process.execPath,
    [
      '--conditions=@constellation/source',
      '--import',
      'tsx',
      join(repoRoot(), 'tools', 'node-image', 'build-node-image.ts'),
      '--guest-agent',
    ],
    { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8', timeout: 20 * 60_000, cwd: repoRoot() },
  );
  if (built.status !== 0) throw new Error(`building the node image failed (exit ${String(built.status)}; see above)`);
  return built.stdout.trim().split('\n').at(-1) ?? '';
}

const SECOND = 1000;

describe('the node image as a VM', () => {
  const ekCa = useTestEkCa();
  let image: string;
  let dir: TempDir;
  const machines: Machine[] = [];

  beforeAll(
    async () => {
      image = nodeImageDir();
      dir = await createTempDir('vm-test-');
    },
    25 * 60 * SECOND,
  );

  afterAll(async () => {
    for (const machine of machines) await machine.destroy().catch(() => undefined);
    await dir.remove();
  }, 60 * SECOND);

  async function vm(name: string, root = join(image, 'root.img')): Promise<VmMachine> {
    const machineDir = join(dir.path, name);
    await manufactureTpm({ stateDir: vmPaths(machineDir).tpmDir, vmid: name, ca: ekCa() });
    const state = join(dir.path, `${name}-state.img`);
    await writeFile(state, '');
    await truncate(state, 64 * 1024 * 1024);
    const machine = await createVmMachine({
      name,
      dir: machineDir,
      disks: [
        { file: join(image, 'esp.img'), serial: 'esp', readOnly: true, format: 'raw' },
        { file: root, serial: 'root', readOnly: true, format: 'raw' },
        { file: join(image, 'root.verity'), serial: 'verity', readOnly: true, format: 'raw' },
        { file: state, serial: 'state', readOnly: false, format: 'raw' },
      ],
      memoryMiB: 1024,
    });
    machines.push(machine);
    return machine;
  }

  it(
    'measures at boot exactly the PCRs 4, 9 and 11 computed from its UKI, and its event log replays to them',
    async () => {
      const machine = await vm('node-a');
      const predicted = predictUkiBoot(await readFile(join(image, 'uki.efi')));
      await machine.boot();
      // The guest agent answers once systemd has started it on the verified root.
      await waitFor(
        () =>
          machine.exec(['true'], { timeoutMs: 10 * SECOND }).then(
            () => true,
            () => false,
          ),
        {
          timeoutMs: 6 * 60 * SECOND,
          intervalMs: 2 * SECOND,
          description: `node-a booted (serial console: ${machine.logPath()})`,
        },
      );
      const quoted = new Map<number, string>();
      for (const pcr of [4, 9, 11]) {
        const { stdout } = await machine.exec(['cat', `/sys/class/tpm/tpm0/pcr-sha256/${pcr}`]);
        quoted.set(pcr, stdout.trim().toLowerCase());
      }
      for (const pcr of [4, 9, 11] as const)
        expect(quoted.get(pcr), `PCR ${pcr}`).toBe(predicted.pcrs[pcr].value.toString('hex'));
      // The image build's signed measurements.json says the same, under the key it publishes.
      const signed = verifySignedMeasurements(
        await readFile(join(image, 'measurements.json')),
        await readFile(join(image, 'measurements.json.sig'), 'utf8'),
        await readFile(join(image, 'measurements.pub'), 'utf8'),
      );
      for (const pcr of [4, 9, 11])
        expect(signed.measurements.get(pcr)?.expected.toString('hex'), `signed PCR ${pcr}`).toBe(quoted.get(pcr));

      const log = await machine.readFile('/sys/kernel/security/tpm0/binary_bios_measurements');
      expect(log).toBeDefined();
      const parsed = parseEventLog(log ?? Buffer.alloc(0));
      const replayed = replayEventLog(parsed).get('sha256');
      for (const pcr of [4, 9, 11])
        expect(replayed?.get(pcr)?.toString('hex'), `PCR ${pcr} replayed`).toBe(quoted.get(pcr));
      // Every event of 4, 9 and 11 is one the image predicts (the policy from-image writes).
      const policy = {
        pcrEventDigests: Object.fromEntries(
          ([4, 9, 11] as const).map((pcr) => [
            String(pcr),
            predicted.pcrs[pcr].events.map((e) => e.digest.toString('hex')),
          ]),
        ),
      };
      expect(checkEventPolicy(parsed, policy)).toEqual([]);

      // Its root is the verified one, and the kernel command line is the image's.
      expect((await machine.exec(['veritysetup', 'status', 'root'])).stdout).toMatch(/status:\s+verified/);
      expect((await machine.exec(['cat', '/proc/cmdline'])).stdout.trim()).toBe(predicted.kernelCommandLine);
      // Files through the seam, as on every provider.
      await machine.writeFile('/run/constellation-seam', 'hello\n');
      expect((await machine.readFile('/run/constellation-seam'))?.toString()).toBe('hello\n');
      expect(await machine.readFile('/run/none')).toBeUndefined();

      await machine.shutdown({ graceMs: 2 * 60 * SECOND });
      expect(await machine.hostProcesses()).toEqual([]);
    },
    10 * 60 * SECOND,
  );

  it(
    'never boots a root file system changed by one byte: the initrd names dm-verity and powers off',
    async () => {
      const changed = join(dir.path, 'root-changed.img');
      await copyFile(join(image, 'root.img'), changed);
      const file = await open(changed, 'r+');
      try {
        // A byte of the squashfs superblock: the first block the initrd reads.
        const byte = Buffer.alloc(1);
        await file.read(byte, 0, 1, 100);
        await file.write(Buffer.of(byte[0]! ^ 0xff), 0, 1, 100);
      } finally {
        await file.close();
      }
      const machine = await vm('node-b', changed);
      await machine.boot();
      await waitFor(async () => (await machine.hostProcesses()).length === 0 || undefined, {
        timeoutMs: 5 * 60 * SECOND,
        intervalMs: SECOND,
        description: 'node-b powering itself off',
      }).catch(async (error: unknown) => {
        await machine.destroy();
        throw error;
      });
      const serial = await readFile(machine.logPath(), 'utf8');
      expect(serial).toContain('constellation-initrd: error: dm-verity: root hash mismatch');
      expect(serial).not.toContain('Welcome to');
      await rm(changed, { force: true });
    },
    10 * 60 * SECOND,
  );
});
