import { createServer } from 'node:net';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Kubectl, locateKubernetesPrograms } from '@constellation/kubernetes-programs';
import { freePort } from '@constellation/swtpm';
import { sharedKubernetes, tempDirForTest } from '@constellation/testing';
import { describe, expect, it, onTestFinished } from 'vitest';
import { UnitRunner, nodeLayout, unitLog } from '@constellation/node-environment';
import type { NodeEnvironment } from '@constellation/node-environment';
import type { MiniNode, MiniState } from './mini-state.js';
import { BOOTSTRAPPER_UNIT } from './providers/namespace-node.js';
import { waitForNodes } from './wait-for-nodes.js';

function miniNode(dir: string, name: string, role: MiniNode['role']): MiniNode {
  return {
    name,
    role,
    ip: '127.0.0.1',
    dir: join(dir, name),
    tpmSocket: join(dir, name, 'tpm', 'swtpm.sock'),
    swtpmPid: -1,
    ekPublicKeyHash: '00'.repeat(32),
    initPort: 0,
    recoveryPort: 0,
    verifyPort: 0,
    tampered: false,
  };
}

/** A mini cluster's state with `nodes`, in `dir`. */
function miniState(dir: string, nodes: MiniNode[]): MiniState {
  return {
    startedAt: new Date().toISOString(),
    dir,
    metadataPid: -1,
    metadataUrl: 'http://127.0.0.1:1',
    joinServicePort: 0,
    apiServerPort: 0,
    network: { mode: 'loopback', hostIp: '127.0.0.1', nodeIps: [], namespaces: [], bridge: '' },
    artifacts: {
      root: dir,
      cli: '',
      bootstrapper: '',
      joinservice: '',
      joinserviceManifests: '',
      joinserviceImage: { archive: '', reference: '' },
    },
    nodes,
  };
}

/**
 * A Ready Node `name` in the run's control plane (its status as a kubelet registers it), deleted
 * when the test ends, and the admin kubeconfig. Node names are the test's own: the run shares it.
 */
async function apiWithReadyNode(name: string): Promise<string> {
  const k = sharedKubernetes();
  const admin = new Kubectl(await locateKubernetesPrograms(k.binDir), k.superAdminKubeconfig);
  await admin.run(
    ['create', '-f', '-'],
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name },
      status: { conditions: [{ type: 'Ready', status: 'True' }] },
    }),
  );
  onTestFinished(async () => {
    await admin.run(['delete', 'node', name, '--wait=false']);
  });
  return k.superAdminKubeconfig;
}

/**
 * The node's unit runner, in this process, with the bootstrapper unit running `script` (its output
 * is the unit's log), and the node's environment record that points mini at it.
 */
async function nodeWithBootstrapper(node: MiniNode, script: string): Promise<void> {
  const layout = nodeLayout(node.dir);
  await mkdir(join(node.dir, 'units'), { recursive: true });
  const runner = new UnitRunner({
    socket: layout.unitsSocket,
    logs: layout.logs,
    env: { PATH: process.env['PATH'] ?? '' },
    units: [
      {
        name: BOOTSTRAPPER_UNIT,
        exec: ['sh', '-c', script],
        startAtBoot: true,
        restart: 'no',
        restartDelayMs: 0,
      },
    ],
  });
  await runner.boot();
  onTestFinished(() => runner.shutdown());
  const record: NodeEnvironment = {
    name: node.name,
    dir: node.dir,
    netns: 'none',
    mountNamespace: '/nonexistent',
    cgroupRoot: '/nonexistent',
    runnerCommand: [],
    runnerPid: process.pid,
  };
  await writeFile(layout.record, JSON.stringify(record));
}

/** A node name of this test's own. */
const uniqueName = (base: string): string => `${base}-${randomBytes(3).toString('hex')}`;

describe('waitForNodes', () => {
  it("fails at once, with the node's last log lines, when an honest node's bootstrapper stops before its node is Ready", async () => {
    const dir = await tempDirForTest();
    // The control plane is a Ready Node; the worker's bootstrapper has exited without joining.
    const controlPlane = uniqueName('control-plane');
    const worker = uniqueName('worker');
    const kubeconfig = await apiWithReadyNode(controlPlane);
    const workerNode = miniNode(dir, worker, 'worker');
    const state = miniState(dir, [miniNode(dir, controlPlane, 'control-plane'), workerNode]);
    const lines = [
      '{"message":"one"}',
      '{"message":"two"}',
      '{"message":"join ticket received"}',
      // Node's report of an uncaught error: only its headline says what happened.
      'node:internal/modules/esm/resolve:283',
      '    throw new ERR_MODULE_NOT_FOUND(',
      '          ^',
      '',
      "Error [ERR_MODULE_NOT_FOUND]: Cannot find module '/image/chunks/chunk-1.mjs' imported from /image/chunks/chunk-2.mjs",
      '    at finalizeResolution (node:internal/modules/esm/resolve:283:11) {',
      "  code: 'ERR_MODULE_NOT_FOUND',",
      '}',
      '',
      'Node.js v20.20.2',
    ];
    // The unit writes what the bootstrapper wrote, then fails as it did.
    await nodeWithBootstrapper(
      workerNode,
      `printf '%s\\n' ${lines.map((l) => `'${l.replaceAll("'", `'\\''`)}'`).join(' ')}; exit 1`,
    );
    // A bound the test's own timeout is far below: only an early failure ends the wait in time.
    const failure = await waitForNodes({ state, kubeconfig, timeoutMs: 600_000 }).then(
      () => new Error('waitForNodes resolved'),
      (err: unknown) => err as Error,
    );
    expect(failure.message).toBe(
      `${worker}'s bootstrapper stopped before joining; its last log lines: {"message":"two"} | {"message":"join ticket received"} | Error [ERR_MODULE_NOT_FOUND]: Cannot find module '/image/chunks/chunk-1.mjs' imported from /image/chunks/chunk-2.mjs (all in ${unitLog(workerNode.dir, BOOTSTRAPPER_UNIT)})`,
    );
  });

  it('reports a Ready node only once its verify endpoint answers: `constellation verify` may come right after `mini up`', async () => {
    const dir = await tempDirForTest();
    const controlPlane = uniqueName('control-plane');
    const kubeconfig = await apiWithReadyNode(controlPlane);
    const verifyPort = await freePort();
    const state = miniState(dir, [{ ...miniNode(dir, controlPlane, 'control-plane'), verifyPort }]);
    const failure = await waitForNodes({ state, kubeconfig, timeoutMs: 1_000 }).then(
      () => new Error('waitForNodes resolved'),
      (err: unknown) => err as Error,
    );
    expect(failure.message).toBe(
      `not up after 1000 ms: ${controlPlane} (Ready, but its verify endpoint does not answer) (logs in ${dir})`,
    );
    const endpoint = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => endpoint.listen(verifyPort, '127.0.0.1', resolve));
    onTestFinished(
      () =>
        new Promise<void>((resolve) => {
          endpoint.close(() => {
            resolve();
          });
        }),
    );
    const nodes = await waitForNodes({ state, kubeconfig, timeoutMs: 10_000 });
    expect(nodes.map((n) => [n.name, n.state, n.attestation])).toEqual([
      [controlPlane, 'initialised', 'measurements match'],
    ]);
  });
});
