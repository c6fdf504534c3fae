import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import type { Server } from 'node:net';
import { join } from 'node:path';
import { ProgramFailed, runProgram } from '@constellation/control-plane';
import { createTempDir } from '@constellation/testing';
import type { TempDir } from '@constellation/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MOUNT_NAMESPACE_DIR, createMountNamespace, removeMountNamespace } from './mount-namespace.js';

// Issue 50, item 6: a namespace node's mount namespace started as a copy of the host's, so the
// node's processes (and a pod with `hostPath: /`) read the operator's workspace (admin kubeconfig,
// master secret), every other node's directory (control-plane-0's CA key, their TPMs), mini's
// vendor keys, and its own TPM's state and control channel. A HostView hides them; what the node
// needs (its own directory, its TPM's data channel) stays. Real namespaces, real mounts.

let dir: TempDir;
let root: string;
let namespace: string;
let tpm: Server;

const paths = () => {
  const workspace = join(root, 'workspace');
  const mini = join(workspace, 'constellation-mini');
  const node = join(mini, 'worker-1');
  return {
    workspace,
    mini,
    node,
    adminConf: join(workspace, 'constellation-admin.conf'),
    otherNodesCaKey: join(mini, 'control-plane-0', 'etc', 'kubernetes', 'pki', 'ca.key'),
    ownFile: join(node, 'etc', 'hosts'),
    tpmDir: join(node, 'tpm'),
    tpmState: join(node, 'tpm', 'tpm2-00.permall'),
    tpmSocket: join(node, 'tpm', 'swtpm.sock'),
    tpmControl: join(node, 'tpm', 'swtpm.sock.ctrl'),
    image: join(mini, 'image', 'bootstrapper.mjs'),
    vendor: join(root, 'config', 'constellation'),
    vendorKey: join(root, 'config', 'constellation', 'mini-vendor', 'ek-ca', 'ca.key'),
  };
};

/** Runs `script` inside the namespace: whether it succeeded, and what it wrote. */
async function inNamespace(script: string): Promise<{ ok: boolean; out: string }> {
  try {
    const { stdout, stderr } = await runProgram('nsenter', [`--mount=${namespace}`, '--', 'sh', '-c', script], {
      timeoutMs: 10_000,
    });
    return { ok: true, out: stdout + stderr };
  } catch (err) {
    if (!(err instanceof ProgramFailed)) throw err;
    return { ok: false, out: err.output };
  }
}

beforeAll(async () => {
  dir = await createTempDir('constellation-mount-namespace-');
  root = dir.path;
  const p = paths();
  for (const file of [p.adminConf, p.otherNodesCaKey, p.ownFile, p.tpmState, p.image, p.vendorKey]) {
    await mkdir(join(file, '..'), { recursive: true });
    await writeFile(file, `contents of ${file}\n`);
  }
  await writeFile(p.tpmControl, 'a control channel stands in here');
  tpm = createServer((socket) => socket.end('tpm answers\n'));
  await new Promise<void>((resolve) => tpm.listen(p.tpmSocket, resolve));
  namespace = join(MOUNT_NAMESPACE_DIR, `test-${randomBytes(4).toString('hex')}.mnt`);
  await createMountNamespace(namespace, new Map(), [
    { hide: p.workspace },
    { hide: p.mini },
    { keep: p.node },
    { keep: join(p.mini, 'image') },
    { hide: p.tpmDir },
    { keep: p.tpmSocket },
    { hide: p.vendor },
  ]);
}, 30_000);

afterAll(async () => {
  await removeMountNamespace(namespace);
  await new Promise((resolve) => tpm.close(resolve));
  await dir.remove();
});

describe("a node's view of the host", () => {
  it("does not show the operator's workspace, other nodes, mini's vendor keys or its own TPM's state", async () => {
    const p = paths();
    for (const secret of [p.adminConf, p.otherNodesCaKey, p.tpmState, p.tpmControl, p.vendorKey]) {
      const read = await inNamespace(`cat '${secret}'`);
      expect(read.ok, secret).toBe(false);
      expect(read.out, secret).toContain('No such file or directory');
    }
    // The host still sees them all: only the node's view changed.
    for (const secret of [p.adminConf, p.otherNodesCaKey, p.tpmState, p.vendorKey]) {
      const read = await runProgram('cat', [secret], { timeoutMs: 5_000 });
      expect(read.stdout).toContain('contents of');
    }
  });

  it('shows what the node has: its own directory, the node image, and its TPM through the data channel only', async () => {
    const p = paths();
    expect((await inNamespace(`cat '${p.ownFile}'`)).out).toBe(`contents of ${p.ownFile}\n`);
    expect((await inNamespace(`cat '${p.image}'`)).out).toBe(`contents of ${p.image}\n`);
    const tpmDir = await inNamespace(`ls -A '${p.tpmDir}'`);
    expect(tpmDir.out.trim()).toBe('swtpm.sock');
    const answer = await runProgram(
      'nsenter',
      [
        `--mount=${namespace}`,
        '--',
        process.execPath,
        '-e',
        `require('node:net').connect(${JSON.stringify(p.tpmSocket)}).on('data', (d) => process.stdout.write(d))`,
      ],
      { timeoutMs: 10_000 },
    );
    expect(answer.stdout).toBe('tpm answers\n');
  });
});
