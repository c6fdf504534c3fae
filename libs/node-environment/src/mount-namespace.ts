import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { runProgram } from '@constellation/control-plane';

/**
 * Where persistent mount namespaces live: a directory bind-mounted on itself with private
 * propagation, because unshare cannot bind a namespace file on a shared mount (/run is shared).
 */
export const MOUNT_NAMESPACE_DIR = '/run/constellation-nodes';

async function isMountPoint(path: string): Promise<boolean> {
  const mountinfo = await readFile('/proc/self/mountinfo', 'utf8');
  return mountinfo.split('\n').some((line) => line.split(' ')[4] === path);
}

async function privateNamespaceDir(): Promise<void> {
  await mkdir(MOUNT_NAMESPACE_DIR, { recursive: true });
  if (await isMountPoint(MOUNT_NAMESPACE_DIR)) return;
  await runProgram('mount', ['--bind', MOUNT_NAMESPACE_DIR, MOUNT_NAMESPACE_DIR], { timeoutMs: 10_000 });
  await runProgram('mount', ['--make-private', MOUNT_NAMESPACE_DIR], { timeoutMs: 10_000 });
}

/**
 * A mount namespace of its own for a node, kept by a file (as `ip netns` keeps network ones):
 * `binds` maps a path as the node sees it to the host directory or file behind it. Propagation is
 * private both ways: what the node mounts (its state disk, pod volumes) stays in it, and goes with
 * it. A missing mount point on the host is created empty.
 */
export async function createMountNamespace(file: string, binds: ReadonlyMap<string, string>): Promise<void> {
  await privateNamespaceDir();
  await removeMountNamespace(file);
  for (const [target, source] of binds) {
    const isFile = (await stat(source)).isFile();
    if (isFile) {
      await mkdir(dirname(target), { recursive: true });
      await writeFile(target, '', { flag: 'a' });
    } else {
      await mkdir(target, { recursive: true });
    }
  }
  await writeFile(file, '');
  // The new namespace starts as a copy of the host's, with every other node's namespace file and
  // every network namespace file mounted in it: detached first, or they would keep those
  // namespaces (and a rebooted node's old mounts, its state disk among them) alive.
  const detach = [MOUNT_NAMESPACE_DIR, '/run/netns'].map((dir) => `umount -l ${dir} 2>/dev/null || true`);
  const script = [
    ...detach,
    ...[...binds].map(([target, source]) => `mount --bind ${shellQuote(source)} ${shellQuote(target)}`),
  ];
  await runProgram('unshare', [`--mount=${file}`, '--propagation', 'private', '--', 'sh', '-ec', script.join('\n')], {
    timeoutMs: 10_000,
  });
}

/** Unmounts the namespace file; the namespace ends once no process is left in it. */
export async function removeMountNamespace(file: string): Promise<void> {
  if (await isMountPoint(file)) await runProgram('umount', [file], { timeoutMs: 10_000 });
  await rm(file, { force: true });
}

function shellQuote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}
