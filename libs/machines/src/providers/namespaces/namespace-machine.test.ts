// A namespace machine through the Machine seam, on real namespaces, a real swtpm and containerd:
// what mini and its tools may rely on whatever the provider.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { componentDigest, expectedMeasurements } from '@constellation/attestation';
import type { BootComponent } from '@constellation/attestation';
import { parseEventLog, replayEventLog } from '@constellation/eventlog';
import {
  CNI_BIN_DIR,
  createNetwork,
  destroyNetwork,
  nodeProgramCommands,
  podSubnet,
} from '@constellation/node-environment';
import type { MiniNetwork } from '@constellation/node-environment';
import { manufactureTpm } from '@constellation/swtpm';
import { createTempDir, kubernetesBinDir, useTestEkCa } from '@constellation/testing';
import type { TempDir } from '@constellation/testing';
import { SocketTransport, Tpm } from '@constellation/tpm';
import { openMachineAt } from '../../machine-record.js';
import type { Machine } from '../../machine.js';
import { isRunning } from '@constellation/process';
import { createNamespaceMachine } from './create-namespace-machine.js';
import { namespaceMachinePaths } from './namespace-paths.js';

const kernel = { pcr: 4, description: 'kernel', digest: componentDigest('a kernel') };
const bootstrapper = { pcr: 9, description: 'bootstrapper', digest: componentDigest('a bootstrapper') };
const other = { pcr: 9, description: 'bootstrapper', digest: componentDigest('another bootstrapper') };

/** PCRs 4 and 9 after a boot that measures `components`. */
const replayEvents = (components: BootComponent[]): Map<number, Buffer> =>
  new Map([...expectedMeasurements(components, [4, 9])].map(([pcr, measurement]) => [pcr, measurement.expected]));

async function quotedPcrs(dir: string): Promise<Map<number, Buffer>> {
  const tpm = new Tpm(new SocketTransport({ path: namespaceMachinePaths(dir).tpmSocket }));
  try {
    return await tpm.pcrRead('sha256', [4, 9]);
  } finally {
    await tpm.close();
  }
}

async function loggedPcrs(machine: Machine): Promise<Map<number, Buffer>> {
  const log = await machine.readFile(namespaceMachinePaths(machine.record.dir).eventLog);
  if (log === undefined) throw new Error('no event log');
  const sha256 = replayEventLog(parseEventLog(log)).get('sha256');
  return new Map([4, 9].map((pcr) => [pcr, sha256?.get(pcr) ?? Buffer.alloc(0)]));
}

describe('a namespace machine', () => {
  const ekCa = useTestEkCa();
  let dir: TempDir;
  let network: MiniNetwork;
  const machines: Machine[] = [];

  beforeAll(async () => {
    dir = await createTempDir('machines-test-');
    network = await createNetwork(3);
  }, 30_000);

  afterAll(async () => {
    for (const machine of machines) await machine.destroy().catch(() => undefined);
    await destroyNetwork(network);
    await dir.remove();
  }, 120_000);

  async function create(
    index: number,
    firmware: Parameters<typeof createNamespaceMachine>[0]['firmware'],
    units: Parameters<typeof createNamespaceMachine>[0]['units'] = [],
  ): Promise<Machine> {
    const name = `node-${index}`;
    const machineDir = join(dir.path, name);
    await manufactureTpm({ stateDir: namespaceMachinePaths(machineDir).tpmDir, vmid: name, ca: ekCa() });
    const hosts = network.nodeIps.map((ip, i) => ({ name: `node-${i}`, ip }));
    const machine = await createNamespaceMachine({
      dir: machineDir,
      name,
      netns: network.namespaces[index] ?? '',
      hosts,
      podSubnet: podSubnet(index),
      peerPodSubnets: [],
      binDir: kubernetesBinDir(),
      sandboxImage: 'registry.k8s.io/pause:3.10',
      cniBinDir: CNI_BIN_DIR,
      kubelet: join(kubernetesBinDir(), 'kubelet'),
      units,
      path: [],
      ...nodeProgramCommands(),
      firmware,
      stateDiskBytes: 1024 * 1024,
    });
    machines.push(machine);
    return machine;
  }

  it('boots measured, runs programs in its own network and files, power-cycles its TPM, and leaves nothing when destroyed', async () => {
    const machine = await create(0, { measured: [kernel, bootstrapper] });
    const expected = replayEvents([kernel, bootstrapper]);
    await machine.boot();
    expect(await quotedPcrs(machine.record.dir)).toEqual(expected);
    expect(await loggedPcrs(machine)).toEqual(expected);

    // Its own address, /etc/hosts and PATH (its systemctl first), as its units have them.
    const address = await machine.exec(['ip', '-4', '-o', 'addr', 'show']);
    expect(address.stdout).toContain(network.nodeIps[0]);
    expect((await machine.exec(['cat', '/etc/hosts'])).stdout).toContain(`${network.nodeIps[1]} node-1`);
    expect((await machine.exec(['sh', '-c', 'command -v systemctl'])).stdout.trim()).toBe(
      join(machine.record.dir, 'usr', 'local', 'sbin', 'systemctl'),
    );
    // A file written through the seam is the file its programs see at that path, and back.
    await machine.writeFile('/run/constellation/hello', 'from the host\n');
    expect((await machine.exec(['cat', '/run/constellation/hello'])).stdout).toBe('from the host\n');
    await machine.exec(['sh', '-c', 'echo from the node > /var/lib/kubelet/answer']);
    expect((await machine.readFile('/var/lib/kubelet/answer'))?.toString()).toBe('from the node\n');
    expect(await machine.readFile('/var/lib/kubelet/none')).toBeUndefined();
    await expect(machine.readFile('/var/lib/../../etc/passwd')).rejects.toThrow(
      '"/var/lib/../../etc/passwd" is not an absolute, normalised path of a file of node-0',
    );
    await expect(machine.writeFile('relative', '')).rejects.toThrow('is not an absolute, normalised path');
    await expect(machine.exec(['false'])).rejects.toThrow();

    // Its service manager: containerd runs as a unit, and the node's systemctl answers for it.
    await expect.poll(() => machine.unitState('containerd'), { timeout: 20_000 }).toMatchObject({ state: 'active' });
    expect((await machine.exec(['systemctl', 'is-active', 'containerd'])).stdout.trim()).toBe('active');
    expect(machine.logPath('containerd')).toBe(join(machine.record.dir, 'log', 'containerd.log'));

    // Power off and on: the units stop, the TPM is reset, and the same boot measures the same values.
    const running = await machine.hostProcesses();
    expect(running.length).toBeGreaterThan(1);
    await machine.shutdown();
    expect(await machine.unitState('containerd')).toBeUndefined();
    await machine.boot();
    expect(await quotedPcrs(machine.record.dir)).toEqual(expected);
    await expect.poll(() => machine.unitState('containerd'), { timeout: 20_000 }).toMatchObject({ state: 'active' });

    // Found again from its directory alone (mini down after a crash), and destroyed: nothing runs.
    const found = await openMachineAt(machine.record.dir);
    expect(found?.record).toEqual(machine.record);
    const processes = await machine.hostProcesses();
    await found?.destroy();
    expect(processes.filter(isRunning)).toEqual([]);
  });

  it("has a firmware whose log may lie about what it measured, as an attacker's would", async () => {
    const machine = await create(1, { measured: [kernel, other], logged: [kernel, bootstrapper] });
    await machine.boot();
    const quoted = await quotedPcrs(machine.record.dir);
    expect(quoted).toEqual(replayEvents([kernel, other]));
    expect(await loggedPcrs(machine)).toEqual(replayEvents([kernel, bootstrapper]));
    expect(JSON.parse(await readFile(join(machine.record.dir, 'machine.json'), 'utf8'))).toEqual({
      provider: 'namespaces',
      name: 'node-1',
      dir: machine.record.dir,
    });
  });

  it('loses power: no unit is told to stop, every process dies, and the machine boots again', async () => {
    // A unit that writes its last words when asked to stop, as a clean shutdown asks it.
    const lastWords = '/var/lib/kubelet/last-words';
    const machine = await create(2, { measured: [kernel, bootstrapper] }, [
      {
        name: 'witness',
        exec: ['sh', '-c', `trap 'echo stopped > ${lastWords}; exit 0' TERM; while true; do sleep 0.1; done`],
        startAtBoot: true,
        restart: 'always',
        restartDelayMs: 100,
      },
    ]);
    await machine.boot();
    await expect.poll(() => machine.unitState('witness'), { timeout: 20_000 }).toMatchObject({ state: 'active' });
    const running = await machine.hostProcesses();
    expect(await machine.poweredOn()).toBe(true);
    await machine.shutdown({ powerLoss: true });
    expect(await machine.poweredOn()).toBe(false);
    // Everything but the TPM, which is reset when the power comes back (at boot).
    const tpm = Number(await readFile(namespaceMachinePaths(machine.record.dir).tpmPidFile, 'utf8'));
    expect(running.filter((pid) => pid !== tpm && isRunning(pid))).toEqual([]);
    expect(await machine.readFile(lastWords)).toBeUndefined();
    await machine.boot();
    await expect.poll(() => machine.unitState('witness'), { timeout: 20_000 }).toMatchObject({ state: 'active' });
    // The clean shutdown, for contrast: the unit was asked and answered.
    await machine.shutdown();
    expect((await machine.readFile(lastWords))?.toString()).toBe('stopped\n');
  });
});
