import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  ADMIN_TOKEN,
  coreApiWithToken,
  kubeConfigWithToken,
  startTokenApiServer,
} from '@constellation/sandbox/testing';
import { freePort } from '@constellation/swtpm';
import { tempDirForTest } from '@constellation/testing';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { MiniNode, MiniState } from './mini-state.js';
import { waitForNodes } from './wait-for-nodes.js';

/** The pid of a process that has exited (and been reaped). */
async function exitedPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
  await new Promise((resolve) => child.once('exit', resolve));
  return child.pid ?? -1;
}

function miniNode(dir: string, name: string, role: MiniNode['role'], bootstrapperPid: number): MiniNode {
  return {
    name,
    role,
    ip: '127.0.0.1',
    dir: join(dir, name),
    tpmSocket: join(dir, name, 'tpm', 'swtpm.sock'),
    swtpmPid: -1,
    ekPublicKeyHash: '00'.repeat(32),
    bootstrapperPid,
    initPort: 0,
    recoveryPort: 0,
    verifyPort: 0,
    tampered: false,
    bootstrapperCommand: [],
    bootstrapperEnv: {},
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
    artifacts: { root: dir, cli: '', bootstrapper: '', joinservice: '', kubeadm: '' },
    nodes,
  };
}

/** The API stand-in with a Ready Node `name`, and an admin kubeconfig for it in `dir`. */
async function apiWithReadyNode(dir: string, name: string): Promise<string> {
  const api = await startTokenApiServer();
  onTestFinished(() => api.close());
  await coreApiWithToken(api, ADMIN_TOKEN).createNode({
    body: { metadata: { name }, status: { conditions: [{ type: 'Ready', status: 'True' }] } },
  });
  const kubeconfig = join(dir, 'admin.conf');
  await writeFile(kubeconfig, kubeConfigWithToken(api, ADMIN_TOKEN).exportConfig());
  return kubeconfig;
}

describe('waitForNodes', () => {
  it("fails at once, with the node's last log lines, when an honest node's bootstrapper stops before its node is Ready", async () => {
    const dir = await tempDirForTest();
    // The control plane is a Ready Node; the worker's bootstrapper has exited without joining.
    const kubeconfig = await apiWithReadyNode(dir, 'control-plane-0');
    const state = miniState(dir, [
      miniNode(dir, 'control-plane-0', 'control-plane', process.pid),
      miniNode(dir, 'worker-1', 'worker', await exitedPid()),
    ]);
    await mkdir(join(dir, 'worker-1'), { recursive: true });
    await writeFile(
      join(dir, 'worker-1', 'bootstrapper.log'),
      [
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
        '',
      ].join('\n'),
    );
    // A bound the test's own timeout is far below: only an early failure ends the wait in time.
    const failure = await waitForNodes({ state, kubeconfig, timeoutMs: 600_000 }).then(
      () => new Error('waitForNodes resolved'),
      (err: unknown) => err as Error,
    );
    expect(failure.message).toBe(
      `worker-1's bootstrapper stopped before joining; its last log lines: {"message":"two"} | {"message":"join ticket received"} | Error [ERR_MODULE_NOT_FOUND]: Cannot find module '/image/chunks/chunk-1.mjs' imported from /image/chunks/chunk-2.mjs (all in ${join(dir, 'worker-1', 'bootstrapper.log')})`,
    );
  });

  it('reports a Ready node only once its verify endpoint answers: `constellation verify` may come right after `mini up`', async () => {
    const dir = await tempDirForTest();
    const kubeconfig = await apiWithReadyNode(dir, 'control-plane-0');
    const verifyPort = await freePort();
    const state = miniState(dir, [{ ...miniNode(dir, 'control-plane-0', 'control-plane', process.pid), verifyPort }]);
    const failure = await waitForNodes({ state, kubeconfig, timeoutMs: 1_000 }).then(
      () => new Error('waitForNodes resolved'),
      (err: unknown) => err as Error,
    );
    expect(failure.message).toBe(
      `not up after 1000 ms: control-plane-0 (Ready, but its verify endpoint does not answer) (logs in ${dir})`,
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
      ['control-plane-0', 'initialised', 'measurements match'],
    ]);
  });
});
