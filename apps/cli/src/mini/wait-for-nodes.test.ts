import { spawn } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  ADMIN_TOKEN,
  coreApiWithToken,
  kubeConfigWithToken,
  startTokenApiServer,
} from '@constellation/sandbox/testing';
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

describe('waitForNodes', () => {
  it("fails at once, with the node's last log lines, when an honest node's bootstrapper stops before its node is Ready", async () => {
    const api = await startTokenApiServer();
    onTestFinished(() => api.close());
    const dir = await tempDirForTest();
    // The control plane is a Ready Node; the worker's bootstrapper has exited without joining.
    await coreApiWithToken(api, ADMIN_TOKEN).createNode({
      body: {
        metadata: { name: 'control-plane-0' },
        status: { conditions: [{ type: 'Ready', status: 'True' }] },
      },
    });
    const state: MiniState = {
      startedAt: new Date().toISOString(),
      dir,
      metadataPid: -1,
      metadataUrl: 'http://127.0.0.1:1',
      joinServicePort: 0,
      apiServerPort: 0,
      network: { mode: 'loopback', hostIp: '127.0.0.1', nodeIps: [], namespaces: [], bridge: '' },
      artifacts: { root: dir, cli: '', bootstrapper: '', joinservice: '', kubeadm: '' },
      nodes: [
        miniNode(dir, 'control-plane-0', 'control-plane', process.pid),
        miniNode(dir, 'worker-1', 'worker', await exitedPid()),
      ],
    };
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
    const kubeconfig = join(dir, 'admin.conf');
    await writeFile(kubeconfig, kubeConfigWithToken(api, ADMIN_TOKEN).exportConfig());

    // A bound the test's own timeout is far below: only an early failure ends the wait in time.
    const failure = await waitForNodes({ state, kubeconfig, timeoutMs: 600_000 }).then(
      () => new Error('waitForNodes resolved'),
      (err: unknown) => err as Error,
    );
    expect(failure.message).toBe(
      `worker-1's bootstrapper stopped before joining; its last log lines: {"message":"two"} | {"message":"join ticket received"} | Error [ERR_MODULE_NOT_FOUND]: Cannot find module '/image/chunks/chunk-1.mjs' imported from /image/chunks/chunk-2.mjs (all in ${join(dir, 'worker-1', 'bootstrapper.log')})`,
    );
  });
});
