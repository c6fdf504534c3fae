import { randomBytes } from 'node:crypto';
import { mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import type { Server } from 'node:net';
import { join } from 'node:path';
import { ProgramFailed, runProgram } from '@constellation/process';
import { createTempDir } from '@constellation/testing';
import type { TempDir } from '@constellation/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MOUNT_NAMESPACE_DIR, createMountNamespace, removeMountNamespace } from './mount-namespace.js';

// Issue 50, item 6: a namespace node's mount namespace started as a copy of the host's, so the
// node's processes (and a pod with `hostPath: /`) read the operator's workspace (admin kubeconfig,
// master secret), every other node's directory (control-plane-0's CA key, their TPMs), mini's
// vendor keys, and its own TPM's state and control channel. A HostView hides them; what the node
// needs (its own directory, its TPM's data channel) stays. Real namespaces, real mounts.
//
// Hiding what is known to be secret left the rest of the host in view (the host's /etc/shadow,
// the operator's home, /tmp, every checkout); and what a node wrote outside its own directories
// (kube-proxy's /lib/modules, /run/xtables.lock) landed on the host. A node now has a root of its
// own: the host's programs and configuration beneath it read-only (writes stay in the node), the
// node's directory and what it is shown at their own place, nothing else.

let dir: TempDir;
let root: string;
let namespace: string;
let tpm: Server;
const marker = `constellation-test-${randomBytes(4).toString('hex')}`;

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
    /** A host file no step names: the rest of the host is not the node's either. */
    elsewhere: join(root, 'elsewhere', 'operator-notes'),
    nodeHosts: join(node, 'etc', 'hosts'),
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
  for (const file of [p.adminConf, p.otherNodesCaKey, p.ownFile, p.tpmState, p.image, p.vendorKey, p.elsewhere]) {
    await mkdir(join(file, '..'), { recursive: true });
    await writeFile(file, `contents of ${file}\n`);
  }
  await writeFile(p.tpmControl, 'a control channel stands in here');
  tpm = createServer((socket) => socket.end('tpm answers\n'));
  await new Promise<void>((resolve) => tpm.listen(p.tpmSocket, resolve));
  namespace = join(MOUNT_NAMESPACE_DIR, `test-${randomBytes(4).toString('hex')}.mnt`);
  await createMountNamespace(namespace, new Map([['/etc/hosts', p.nodeHosts]]), [
    { show: p.node, writable: true },
    { show: join(p.mini, 'image') },
    { hide: p.tpmDir },
    { show: p.tpmSocket, writable: true },
  ]);
}, 30_000);

afterAll(async () => {
  // Where a failing run of the write test below would have written on the host.
  await rm(`/usr/lib/${marker}`, { recursive: true, force: true });
  await rm(`/usr/bin/${marker}`, { force: true });
  await removeMountNamespace(namespace);
  await new Promise((resolve) => tpm.close(resolve));
  await dir.remove();
});

describe("a node's view of the host", () => {
  it("does not show the operator's workspace, other nodes, mini's vendor keys or its own TPM's state", async () => {
    const p = paths();
    for (const secret of [p.adminConf, p.otherNodesCaKey, p.tpmState, p.tpmControl, p.vendorKey, p.elsewhere]) {
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

describe("a node's root of its own", () => {
  /** The directories a machine's root has; the node's shown paths add their first component. */
  const systemEntries = ['bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32', 'usr', 'etc', 'proc', 'sys', 'dev'];
  const ownEntries = ['run', 'tmp', 'var', 'root', 'home', 'mnt', 'opt', 'srv'];

  it("has none of the host's other top-level directories, and none of its secrets in /etc", async () => {
    const p = paths();
    const allowed = new Set([...systemEntries, ...ownEntries, p.node.split('/')[1]]);
    const listed = (await inNamespace('ls -A /')).out.split('\n').filter((entry) => entry !== '');
    expect(listed.filter((entry) => !allowed.has(entry))).toEqual([]);
    // The host has these; the node does not.
    const hostOnly = (await readdir('/')).filter((entry) => !allowed.has(entry));
    for (const entry of hostOnly) expect(listed, entry).not.toContain(entry);
    if (await stat('/etc/shadow').catch(() => undefined)) {
      const shadow = await inNamespace('cat /etc/shadow');
      expect(shadow.out).toContain('No such file or directory');
    }
    // The node's /etc is the host's otherwise (its programs' configuration), with the node's own files bound in.
    expect((await inNamespace('cat /etc/hosts')).out).toBe(`contents of ${p.nodeHosts}\n`);
    expect((await inNamespace('test -f /etc/nsswitch.conf -o -f /etc/ld.so.cache && echo configured')).out).toContain(
      'configured',
    );
  });

  it("keeps what the node writes to the host's program directories in the node", async () => {
    // kube-proxy's pod mounts /lib/modules, which containerd creates when missing: on the host, before.
    const write = await inNamespace(`mkdir -p /lib/${marker} && touch /usr/bin/${marker} && ls /usr/lib/${marker}`);
    expect(write.ok, write.out).toBe(true);
    expect(await stat(`/usr/lib/${marker}`).catch(() => undefined)).toBeUndefined();
    expect(await stat(`/usr/bin/${marker}`).catch(() => undefined)).toBeUndefined();
  });

  it('does not let the node write to what it is shown read-only', async () => {
    const p = paths();
    const write = await inNamespace(`echo tampered > '${p.image}'`);
    expect(write.ok).toBe(false);
    expect(write.out).toContain('Read-only file system');
    const own = await inNamespace(`echo mine > '${join(p.node, 'written-by-node')}'`);
    expect(own.ok, own.out).toBe(true);
  });
});
