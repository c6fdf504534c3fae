// The image's root filesystem: Debian bookworm minbase from the archive (mmdebstrap), our node
// .deb, the container runtime of the Kubernetes build, and the settings of a read-only,
// stateless root.
import { existsSync } from 'node:fs';
import {
  appendFile,
  chmod,
  copyFile,
  mkdir,
  mkdtemp,
  readFile,
  readdir,
  rm,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { DEBIAN_PACKAGES, GUEST_AGENT_PACKAGE, RUNTIME_PROGRAMS, SUITE, TRUST_FILES } from './recipe.js';
import type { RecipeInputs, TrustFile } from './recipe.js';
import { run } from './progress.js';
import {
  BOOT_MEASUREMENTS_SCRIPT,
  BOOT_MEASUREMENTS_SCRIPT_PATH,
  BOOT_MEASUREMENTS_UNIT,
  CONSOLE_OUTPUT_DROP_IN,
  CONTAINERD_UNIT,
  FSTAB,
  INSTANCE_DATA,
  INSTANCE_DATA_SCRIPT,
  INSTANCE_DATA_UNIT,
  KUBELET_UNIT,
  KUBERNETES_MODULES,
  KUBERNETES_SYSCTL,
  NETWORK_CONFIG,
  PREPARED_BIN_DIR,
  RUNTIME_BIN_DIR,
  WAIT_ONLINE_DROP_IN,
  bootstrapperDropIn,
  containerdConfig,
} from './rootfs-files.js';

/** The image's name and version in its os-release (IMAGE_ID, IMAGE_VERSION). */
export const IMAGE_ID = 'constellation-node';

/**
 * Documentation, manual pages and translations are left out of the image (copyright files stay):
 * a node has no reader for them.
 */
const DPKG_EXCLUDES = [
  'path-exclude=/usr/share/man/*',
  'path-exclude=/usr/share/info/*',
  'path-exclude=/usr/share/locale/*',
  'path-exclude=/usr/share/doc/*',
  'path-include=/usr/share/doc/*/copyright',
];

/**
 * The linux-image package depends on an initramfs generator (initramfs-tools | linux-initramfs-tool).
 * The image's initrd is ours, built outside the image (initrd.ts): this empty package stands for it,
 * so initramfs-tools is neither installed nor run.
 */
async function buildInitrdPlaceholder(work: string, epoch: number): Promise<string> {
  const stage = join(work, 'placeholder');
  await rm(stage, { recursive: true, force: true });
  await mkdir(join(stage, 'DEBIAN'), { recursive: true });
  await writeFile(
    join(stage, 'DEBIAN', 'control'),
    [
      'Package: constellation-node-initrd',
      'Version: 1',
      'Architecture: all',
      'Maintainer: constellation-ts maintainers <maintainers@example.invalid>',
      'Provides: linux-initramfs-tool',
      'Section: admin',
      'Priority: optional',
      "Description: the node image's initrd is built outside the image",
      ' The constellation node image boots with an initrd of its own, built by',
      ' tools/node-image from this root filesystem and placed in its UKI: no',
      ' initramfs generator runs inside the image.',
      '',
    ].join('\n'),
  );
  const deb = join(work, 'constellation-node-initrd_1_all.deb');
  await run('dpkg-deb', ['--root-owner-group', '-Zgzip', '--build', stage, deb], {
    env: { ...process.env, SOURCE_DATE_EPOCH: String(epoch) },
  });
  return deb;
}

/**
 * Runs mmdebstrap into `root` (which must not exist). Local .deb files must have the same path
 * inside the root as outside (apt hands dpkg the path), and mmdebstrap's hook leaves the mount
 * points it made for them behind: so they are staged under /tmp, which mmdebstrap empties in the
 * root at the end. A path elsewhere (the repository's, the cache's with a process id) would stay
 * in the image and change its root hash from build to build.
 */
export async function bootstrap(root: string, inputs: RecipeInputs): Promise<void> {
  const staging = await mkdtemp('/tmp/constellation-node-image-debs-');
  try {
    await bootstrapWith(root, inputs, staging);
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
  for (const leaked of [staging, inputs.deb.path]) {
    if (existsSync(join(root, leaked))) throw new Error(`mmdebstrap left ${leaked} in the image's root`);
  }
}

async function bootstrapWith(root: string, inputs: RecipeInputs, staging: string): Promise<void> {
  const placeholder = await buildInitrdPlaceholder(staging, inputs.sourceDateEpoch);
  const deb = join(staging, basename(inputs.deb.path));
  await copyFile(inputs.deb.path, deb);
  const packages: string[] = [...DEBIAN_PACKAGES, ...(inputs.guestAgent ? [GUEST_AGENT_PACKAGE] : [])];
  await rm(root, { recursive: true, force: true });
  await run(
    'mmdebstrap',
    [
      '--variant=minbase',
      '--mode=root',
      '--format=directory',
      '--aptopt=Apt::Install-Recommends "false"',
      ...DPKG_EXCLUDES.map((option) => `--dpkgopt=${option}`),
      `--include=${packages.join(',')}`,
      // Paths are passed one per option: a path is never split at commas.
      `--include=${placeholder}`,
      `--include=${deb}`,
      // Makes the local .deb files visible inside the chroot for dpkg.
      '--hook-dir=/usr/share/mmdebstrap/hooks/file-mirror-automount',
      SUITE,
      root,
      inputs.aptSources,
    ],
    { env: { ...process.env, SOURCE_DATE_EPOCH: String(inputs.sourceDateEpoch), LC_ALL: 'C.UTF-8', TZ: 'UTC' } },
  );
}

async function writeIn(root: string, path: string, content: string, mode = 0o644): Promise<void> {
  const target = join(root, path);
  await mkdir(dirname(target), { recursive: true, mode: 0o755 });
  await writeFile(target, content);
  await chmod(target, mode);
}

async function linkIn(root: string, path: string, target: string): Promise<void> {
  await mkdir(dirname(join(root, path)), { recursive: true });
  await rm(join(root, path), { force: true });
  await symlink(target, join(root, path));
}

/** systemctl on the image's unit files (no running systemd needed). */
async function systemctl(root: string, ...args: string[]): Promise<void> {
  await run('systemctl', [`--root=${root}`, '--quiet', ...args]);
}

/** Turns the bootstrapped tree into the node image's root; returns the kernel version. */
export async function customize(root: string, inputs: RecipeInputs, imageVersion: string): Promise<string> {
  await installKubernetesRuntime(root, inputs);
  await installNodeServices(root, inputs);
  await configureNetwork(root);
  await makeImmutable(root);
  await makeStateless(root, inputs, imageVersion);
  await checkProgramsRun(root, inputs);
  return kernelVersion(root);
}

/**
 * The container runtime from the Kubernetes build (kubeadm and the kubelet come at first boot,
 * from node preparation), the kubelet's unit, the kernel settings it needs and the trust files.
 */
async function installKubernetesRuntime(root: string, inputs: RecipeInputs): Promise<void> {
  if (inputs.runtime !== undefined) {
    for (const program of RUNTIME_PROGRAMS) {
      const target = join(root, RUNTIME_BIN_DIR, program);
      await copyFile(join(inputs.runtime.binDir, program), target);
      await chmod(target, 0o755);
    }
    await writeIn(root, '/lib/systemd/system/containerd.service', CONTAINERD_UNIT);
    await writeIn(root, '/etc/containerd/config.toml', containerdConfig(inputs.runtime.sandboxImage));
    await systemctl(root, 'enable', 'containerd.service');
  }
  for (const program of ['kubeadm', 'kubelet']) {
    await linkIn(root, join(RUNTIME_BIN_DIR, program), join(PREPARED_BIN_DIR, program));
  }
  await writeIn(root, '/lib/systemd/system/kubelet.service', KUBELET_UNIT);
  await writeIn(root, '/etc/sysctl.d/90-kubernetes.conf', KUBERNETES_SYSCTL);
  await writeIn(root, '/etc/modules-load.d/kubernetes.conf', KUBERNETES_MODULES);
  for (const file of Object.keys(TRUST_FILES) as TrustFile[]) {
    const given = inputs.trust[file];
    if (given !== undefined) await writeIn(root, TRUST_FILES[file].path, await readFile(given.path, 'utf8'));
  }
}

/**
 * The instance data the host passes (fw_cfg), the bootstrapper's flags on this image, the boot's
 * measurements on the console for the host that booted it, and our services' output there.
 */
async function installNodeServices(root: string, inputs: RecipeInputs): Promise<void> {
  await writeIn(root, INSTANCE_DATA.script, INSTANCE_DATA_SCRIPT, 0o755);
  await writeIn(root, `/lib/systemd/system/${INSTANCE_DATA.unit}`, INSTANCE_DATA_UNIT);
  await systemctl(root, 'enable', INSTANCE_DATA.unit);
  await writeIn(
    root,
    '/etc/systemd/system/constellation-bootstrapper.service.d/20-node-image.conf',
    bootstrapperDropIn(inputs.trust.ekIntermediates === undefined ? undefined : TRUST_FILES.ekIntermediates.path),
  );
  await writeIn(root, BOOT_MEASUREMENTS_SCRIPT_PATH, BOOT_MEASUREMENTS_SCRIPT, 0o755);
  await writeIn(root, '/lib/systemd/system/constellation-boot-measurements.service', BOOT_MEASUREMENTS_UNIT);
  await systemctl(root, 'enable', 'constellation-boot-measurements.service');
  for (const unit of ['constellation-bootstrapper.service', 'constellation-node-prep.service']) {
    await writeIn(root, `/etc/systemd/system/${unit}.d/10-console.conf`, CONSOLE_OUTPUT_DROP_IN);
  }
}

/** DHCP on Ethernet (networkd), DNS through resolved. */
async function configureNetwork(root: string): Promise<void> {
  await writeIn(root, '/etc/systemd/network/80-constellation-dhcp.network', NETWORK_CONFIG);
  await writeIn(root, '/etc/systemd/system/systemd-networkd-wait-online.service.d/10-any.conf', WAIT_ONLINE_DROP_IN);
  await systemctl(root, 'enable', 'systemd-networkd.service', 'systemd-resolved.service');
  await linkIn(root, '/etc/resolv.conf', '../run/systemd/resolve/stub-resolv.conf');
}

/**
 * An immutable node: no logins (no account has a password; the console is for the host to read),
 * no package updates, backups of the package database or file system checks on a timer, and
 * nothing but systemd-stub extending PCR 11.
 */
async function makeImmutable(root: string): Promise<void> {
  await systemctl(root, 'set-default', 'multi-user.target');
  await systemctl(root, 'mask', 'getty.target');
  await systemctl(
    root,
    'disable',
    'apt-daily.timer',
    'apt-daily-upgrade.timer',
    'dpkg-db-backup.timer',
    'e2scrub_all.timer',
    'e2scrub_reap.service',
    'fstrim.timer',
  );
  // PCR 11 holds systemd-stub's measurements of the UKI and nothing else: systemd-pcrphase would
  // extend it at points of the boot, so its value would depend on when it is read.
  await systemctl(
    root,
    'mask',
    'systemd-pcrphase.service',
    'systemd-pcrphase-sysinit.service',
    'systemd-pcrphase-initrd.service',
  );
}

/**
 * A read-only, stateless /etc: no hostname of the build machine (DHCP's or "localhost"), an
 * empty machine-id (systemd makes a new one in memory at every boot; not a "first boot"), no
 * update-done markers to write; and nothing left from the installation that differs every time.
 */
async function makeStateless(root: string, inputs: RecipeInputs, imageVersion: string): Promise<void> {
  await rm(join(root, 'etc', 'hostname'), { force: true });
  await writeFile(join(root, 'etc', 'machine-id'), '');
  await chmod(join(root, 'etc', 'machine-id'), 0o444);
  const updated = `TIMESTAMP_NSEC=${BigInt(inputs.sourceDateEpoch) * 1_000_000_000n}\n`;
  await writeIn(root, '/etc/.updated', updated);
  await writeIn(root, '/var/.updated', updated);
  await writeIn(root, '/etc/fstab', FSTAB);
  for (const dir of ['etc/kubernetes', 'etc/cni/net.d']) await mkdir(join(root, dir), { recursive: true, mode: 0o755 });
  await appendFile(join(root, 'usr', 'lib', 'os-release'), `IMAGE_ID=${IMAGE_ID}\nIMAGE_VERSION=${imageVersion}\n`);
  for (const path of [
    'var/cache/debconf/config.dat-old',
    'var/cache/debconf/templates.dat-old',
    'var/lib/dpkg/status-old',
    'var/lib/dpkg/diversions-old',
  ]) {
    await rm(join(root, path), { force: true });
  }
}

/** The node's programs run in this userland (single executables: no Node.js in the image). */
async function checkProgramsRun(root: string, inputs: RecipeInputs): Promise<void> {
  const clean = { env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LC_ALL: 'C.UTF-8' } };
  await run('chroot', [root, '/usr/bin/constellation-bootstrapper', '--help'], clean);
  await run('chroot', [root, '/usr/bin/constellation-node-prep', '--help'], clean);
  if (inputs.runtime !== undefined)
    await run('chroot', [root, join(RUNTIME_BIN_DIR, 'containerd'), '--version'], clean);
}

/** The version of the image's one kernel. */
async function kernelVersion(root: string): Promise<string> {
  const kernels = await readdir(join(root, 'usr', 'lib', 'modules'));
  if (kernels.length !== 1 || kernels[0] === undefined) {
    throw new Error(`expected one kernel in the image, found ${kernels.length}: ${kernels.join(', ')}`);
  }
  return kernels[0];
}
