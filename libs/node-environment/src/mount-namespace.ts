import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { runProgram } from '@constellation/process';
import { errorMessage } from '@constellation/errors';

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
 * Host paths a node sees at their own place, as steps applied in order on top of its own root:
 * `show` binds a host file or directory (read-only unless `writable`), `hide` puts an empty tmpfs
 * over a directory shown before (a part of the node's directory that is not the node's to read).
 */
export type HostView = readonly ({ readonly show: string; readonly writable?: boolean } | { readonly hide: string })[];

/**
 * The top-level entries of a machine's root that are the host's programs and configuration. A
 * symbolic link (a merged /usr's /bin, /lib) is copied as it is; a directory is layered: the host's
 * beneath, read-only, and what the node writes (containerd creating kube-proxy's /lib/modules, say)
 * kept in the node's namespace, gone at its next boot, as with an immutable image.
 */
const SYSTEM_ENTRIES = ['usr', 'etc', 'bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32'] as const;

/** The host's kernel interfaces, bound with everything mounted below them (cgroups, /dev/pts). */
const KERNEL_ENTRIES = ['proc', 'sys', 'dev'] as const;

/** Secrets of the host in /etc, which a node's /etc (the host's configuration otherwise) does not have. */
const HOST_SECRETS = ['shadow', 'shadow-', 'gshadow', 'gshadow-', 'ssh/ssh_host_*'] as const;

/**
 * A mount namespace of its own for a node, kept by a file (as `ip netns` keeps network ones), with
 * a root of its own (pivot_root, as a container runtime does): the host's programs and
 * configuration beneath it read-only (SYSTEM_ENTRIES, /etc without HOST_SECRETS), the kernel's
 * /proc, /sys and /dev, empty /run, /tmp, /var and home directories, then `binds` (a path as the
 * node sees it → the host directory or file behind it), then `view`. Nothing else of the host is
 * there: not the operator's files, not other nodes', not the host's /tmp. Propagation is private
 * both ways: what the node mounts (its state disk, pod volumes) stays in it, and goes with it.
 */
export async function createMountNamespace(
  file: string,
  binds: ReadonlyMap<string, string>,
  view: HostView = [],
): Promise<void> {
  await privateNamespaceDir();
  await removeMountNamespace(file);
  for (const source of [...binds.values(), ...view.flatMap((step) => ('show' in step ? [step.show] : []))])
    await stat(source).catch((err: unknown) => {
      throw new Error(`a node cannot be shown ${source}: ${errorMessage(err)}`, { cause: err });
    });
  await writeFile(file, '');
  await runProgram(
    'unshare',
    [`--mount=${file}`, '--propagation', 'private', '--', 'sh', '-ec', rootScript(binds, view)],
    {
      timeoutMs: 10_000,
    },
  );
}

/** Where the new root is put together, inside the namespace (on MOUNT_NAMESPACE_DIR, detached there already). */
const NEW_ROOT = `${MOUNT_NAMESPACE_DIR}/root`;
/** What the node writes to the host's layered directories (overlayfs's upper layers), outside its root. */
const LAYERS = `${MOUNT_NAMESPACE_DIR}/layers`;

/** The shell steps, run in the new namespace, that make the node's root and pivot into it. */
function rootScript(binds: ReadonlyMap<string, string>, view: HostView): string {
  const inRoot = (path: string): string => shellQuote(`${NEW_ROOT}${path}`);
  const script = [
    // The namespace starts as a copy of the host's, with every other node's namespace file and every
    // network namespace file mounted in it: detached first, or they would keep those namespaces (and
    // a rebooted node's old mounts, its state disk among them) alive.
    ...[MOUNT_NAMESPACE_DIR, '/run/netns'].map((dir) => `umount -l ${dir} 2>/dev/null || true`),
    `mount -t tmpfs -o mode=0700,size=1m constellation-stage ${MOUNT_NAMESPACE_DIR}`,
    `mkdir ${NEW_ROOT} ${LAYERS}`,
    // Sizes are limits, not reservations: the node's own files outside its bind mounts are small.
    `mount -t tmpfs -o mode=0755,size=512m constellation-node-root ${NEW_ROOT}`,
    `mount -t tmpfs -o mode=0700,size=512m constellation-node-layers ${LAYERS}`,
    ...SYSTEM_ENTRIES.map((entry) => systemEntryScript(entry)),
    ...KERNEL_ENTRIES.map((entry) => `mkdir ${inRoot(`/${entry}`)} && mount --rbind /${entry} ${inRoot(`/${entry}`)}`),
    `mkdir -p ${['/run/lock', '/tmp', '/var/tmp', '/var/lib', '/var/log', '/var/cache', '/root', '/home', '/mnt', '/opt', '/srv'].map(inRoot).join(' ')}`,
    `chmod 1777 ${inRoot('/tmp')} ${inRoot('/var/tmp')} && chmod 0700 ${inRoot('/root')}`,
    `ln -s ../run ${inRoot('/var/run')} && ln -s ../run/lock ${inRoot('/var/lock')}`,
    `rm -rf ${HOST_SECRETS.map((secret) => `${NEW_ROOT}/etc/${secret}`).join(' ')}`,
    ...[...binds].map(([target, source]) => bindScript(source, target, true)),
    ...view.map((step) =>
      'show' in step
        ? bindScript(step.show, step.show, step.writable === true)
        : `if [ -d ${inRoot(step.hide)} ]; then mount -t tmpfs -o mode=0755,size=1m constellation-hidden ${inRoot(step.hide)}; fi`,
    ),
    `cd ${NEW_ROOT} && mkdir .host && pivot_root . .host`,
    'cd / && umount -l /.host && rmdir /.host',
  ];
  return script.join('\n');
}

/** A host system entry in the new root: a symbolic link copied, a directory layered over the host's. */
function systemEntryScript(entry: (typeof SYSTEM_ENTRIES)[number]): string {
  const host = `/${entry}`;
  const target = shellQuote(`${NEW_ROOT}${host}`);
  const upper = shellQuote(`${LAYERS}/${entry}`);
  const work = shellQuote(`${LAYERS}/${entry}.work`);
  return [
    `if [ -L ${host} ]; then ln -s "$(readlink ${host})" ${target}`,
    `elif [ -d ${host} ]; then mkdir ${target} ${upper} ${work} && mount -t overlay -o lowerdir=${host},upperdir=${upper},workdir=${work} constellation-system ${target}`,
    'fi',
  ].join('\n');
}

/**
 * Binds a host path into the new root: a mount point of the same kind is made first (a symbolic
 * link there, /etc/resolv.conf on some hosts, is replaced: mount would follow it out of the root).
 */
function bindScript(source: string, target: string, writable: boolean): string {
  const from = shellQuote(source);
  const to = shellQuote(`${NEW_ROOT}${target}`);
  return [
    `if [ -L ${to} ]; then rm ${to}; fi`,
    `if [ -d ${from} ]; then mkdir -p ${to}; else mkdir -p "$(dirname ${to})" && { [ -e ${to} ] || touch ${to}; }; fi`,
    `mount --bind${writable ? '' : ' -o ro'} ${from} ${to}`,
  ].join('\n');
}

/** Unmounts the namespace file; the namespace ends once no process is left in it. */
export async function removeMountNamespace(file: string): Promise<void> {
  if (await isMountPoint(file)) await runProgram('umount', [file], { timeoutMs: 10_000 });
  await rm(file, { force: true });
}

function shellQuote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}
