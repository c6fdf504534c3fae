// The node image's initrd: busybox, veritysetup with the libraries it loads, the kernel modules for
// virtio disks, dm-verity and squashfs, and our /init (initrd/init.sh). Every file comes from the
// image's own root filesystem, so the initrd matches the image's packages. The cpio archive is
// reproducible: sorted names, owner root, one timestamp, no inode numbers; zstd with one thread.
import { chmod, copyFile, mkdir, open, readFile, readlink, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { HERE } from './recipe.js';
import { run } from './progress.js';
import { copyFromRoot } from './rootfs-copy.js';
import { setTimestamps } from './timestamps.js';

/**
 * The modules /init loads, each with its dependencies first (modprobe --show-depends): virtio's PCI
 * transport and block driver (Debian's cloud kernel builds them as modules), device-mapper with
 * dm-verity, squashfs, and pvpanic (a kernel panic, such as dm-verity's on a corrupted block, ends
 * the VM instead of leaving it hanging).
 */
export const INITRD_MODULES = [
  'virtio_ring',
  'virtio',
  'virtio_pci_modern_dev',
  'virtio_pci_legacy_dev',
  'virtio_pci',
  'virtio_blk',
  'dm_mod',
  'dm_verity',
  'squashfs',
  'pvpanic_pci',
] as const;

/** The programs /init runs besides busybox's applets. */
const PROGRAMS = ['/usr/sbin/veritysetup'];

/** Builds `<out>` (a newc cpio archive, zstd-compressed) from the image root `root`. */
export async function buildInitrd(
  root: string,
  kernelVersion: string,
  work: string,
  out: string,
  epoch: number,
): Promise<void> {
  const stage = join(work, 'initrd');
  await rm(stage, { recursive: true, force: true });
  for (const dir of ['dev', 'proc', 'sys', 'run', 'tmp', 'sysroot', 'etc/constellation-initrd']) {
    await mkdir(join(stage, dir), { recursive: true, mode: 0o755 });
  }
  await run('mknod', ['-m', '600', join(stage, 'dev', 'console'), 'c', '5', '1']);
  await run('mknod', ['-m', '666', join(stage, 'dev', 'null'), 'c', '1', '3']);

  // The merged /usr's links, as in the image (/bin → usr/bin …).
  for (const name of ['bin', 'sbin', 'lib', 'lib64']) {
    await symlink(await readlink(join(root, name)), join(stage, name));
  }
  // busybox, and every applet as a link to it.
  const busybox = await copyFromRoot(root, stage, '/bin/busybox');
  const applets = (await run('chroot', [root, '/bin/busybox', '--list-full'])).split('\n').filter((l) => l !== '');
  for (const applet of applets) {
    if (applet.endsWith('/busybox')) continue;
    const link = join(stage, 'usr', applet.replace(/^(usr\/)?/, ''));
    await mkdir(join(link, '..'), { recursive: true });
    await rm(link, { force: true });
    await symlink(busybox, link);
  }

  for (const program of PROGRAMS) {
    await copyFromRoot(root, stage, program);
    for (const library of await sharedLibraries(root, program)) await copyFromRoot(root, stage, library);
  }

  const modules = await modulePaths(root, kernelVersion);
  for (const module of modules) await copyFromRoot(root, stage, module);
  await writeFile(join(stage, 'etc', 'constellation-initrd', 'modules'), `${modules.join('\n')}\n`);

  await copyFile(join(HERE, 'initrd', 'init.sh'), join(stage, 'init'));
  await chmod(join(stage, 'init'), 0o755);

  await setTimestamps(stage, epoch);
  const names = (await run('find', ['.', '-mindepth', '1', '-print0'], { cwd: stage }))
    .split('\0')
    .filter((n) => n !== '')
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const archive = `${out}.cpio`;
  const file = await open(archive, 'w');
  try {
    await run('cpio', ['--null', '--create', '--format=newc', '--reproducible', '--owner=0:0', '--quiet'], {
      cwd: stage,
      input: `${names.join('\0')}\0`,
      stdoutFd: file.fd,
    });
  } finally {
    await file.close();
  }
  // The archive must end as the kernel expects (newc's trailer); a quick sanity check.
  const tail = (await readFile(archive)).subarray(-512).toString('latin1');
  if (!tail.includes('TRAILER!!!')) throw new Error(`${archive}: cpio wrote no trailer`);
  // zstd (the kernel unpacks it itself): a third of the size, and so a third of the bytes the
  // firmware reads and hashes three times (PCR 4 with the UKI, PCR 11, PCR 9), which under
  // software emulation costs seconds. One thread: the same bytes every time.
  await run('zstd', ['-q', '-f', '-19', '-T1', archive, '-o', out]);
  await rm(archive);
}

/** The shared libraries and the loader `ldd` names for a program, run inside the image. */
async function sharedLibraries(root: string, program: string): Promise<string[]> {
  const output = await run('chroot', [root, 'ldd', program]);
  const libraries: string[] = [];
  for (const line of output.split('\n')) {
    const match = /(?:=>\s*)?(\/\S+)\s+\(0x[0-9a-f]+\)/.exec(line);
    if (match?.[1] !== undefined) libraries.push(match[1]);
    else if (/not found/.test(line)) throw new Error(`${program} in the image needs a missing library: ${line.trim()}`);
  }
  return libraries;
}

/** The module files for INITRD_MODULES in load order (dependencies first, each once). */
async function modulePaths(root: string, kernelVersion: string): Promise<string[]> {
  const paths: string[] = [];
  for (const module of INITRD_MODULES) {
    const output = await run('chroot', [root, 'modprobe', '--set-version', kernelVersion, '--show-depends', module]);
    for (const line of output.split('\n')) {
      const match = /^insmod (\S+)/.exec(line);
      if (match?.[1] !== undefined && !paths.includes(match[1])) paths.push(match[1]);
    }
  }
  return paths;
}
