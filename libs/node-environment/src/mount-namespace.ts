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
 * What a node sees of the host's file system beyond its bind mounts, as steps applied in order:
 * `hide` puts an empty tmpfs over a directory (the node sees it empty), `keep` shows a host path
 * again at its own place (inside a hidden directory, say). A namespace starts as a copy of the
 * host's, so without hiding a node (its processes, a pod's hostPath) reads every other node's
 * files and the operator's.
 */
export type HostView = readonly ({ readonly hide: string } | { readonly keep: string })[];

/**
 * A mount namespace of its own for a node, kept by a file (as `ip netns` keeps network ones):
 * `binds` maps a path as the node sees it to the host directory or file behind it, then `view`
 * hides and keeps host paths (HostView). Propagation is private both ways: what the node mounts
 * (its state disk, pod volumes) stays in it, and goes with it. A missing mount point on the host
 * is created empty.
 */
export async function createMountNamespace(
  file: string,
  binds: ReadonlyMap<string, string>,
  view: HostView = [],
): Promise<void> {
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
    ...hostViewScript(view),
  ];
  await runProgram('unshare', [`--mount=${file}`, '--propagation', 'private', '--', 'sh', '-ec', script.join('\n')], {
    timeoutMs: 10_000,
  });
}

/**
 * The shell steps of a HostView, run inside the new namespace. What is kept is first bound to a
 * staging tmpfs (on MOUNT_NAMESPACE_DIR, detached in the namespace already), because hiding a
 * directory also hides what is below it; then each step in order; then the staging goes.
 */
function hostViewScript(view: HostView): string[] {
  if (view.length === 0) return [];
  const staged = (i: number): string => shellQuote(`${MOUNT_NAMESPACE_DIR}/${i}`);
  const script = [`mount -t tmpfs -o mode=0700,size=1m constellation-stage ${MOUNT_NAMESPACE_DIR}`];
  view.forEach((step, i) => {
    if (!('keep' in step)) return;
    const path = shellQuote(step.keep);
    // A path that does not exist (yet) is not shown; nothing else is.
    script.push(
      `if [ -d ${path} ]; then mkdir ${staged(i)}; elif [ -e ${path} ]; then touch ${staged(i)}; fi`,
      `if [ -e ${staged(i)} ]; then mount --bind ${path} ${staged(i)}; fi`,
    );
  });
  view.forEach((step, i) => {
    if ('hide' in step) {
      const path = shellQuote(step.hide);
      script.push(`if [ -d ${path} ]; then mount -t tmpfs -o mode=0755,size=1m constellation-hidden ${path}; fi`);
      return;
    }
    const path = shellQuote(step.keep);
    script.push(
      `if [ -d ${staged(i)} ]; then mkdir -p ${path}; elif [ -e ${staged(i)} ]; then mkdir -p "$(dirname ${path})"; [ -e ${path} ] || touch ${path}; fi`,
      `if [ -e ${staged(i)} ]; then mount --bind ${staged(i)} ${path}; fi`,
    );
  });
  script.push(`umount -l ${MOUNT_NAMESPACE_DIR}`);
  return script;
}

/** Unmounts the namespace file; the namespace ends once no process is left in it. */
export async function removeMountNamespace(file: string): Promise<void> {
  if (await isMountPoint(file)) await runProgram('umount', [file], { timeoutMs: 10_000 });
  await rm(file, { force: true });
}

function shellQuote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}
