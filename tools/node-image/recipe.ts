// What an image is made of: Debian's packages, the fixed values that make it reproducible, and the
// recipe hash that names its cache directory.
import { createHash } from 'node:crypto';
import { readFile, readdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { run } from './progress.js';

export const HERE = dirname(fileURLToPath(import.meta.url));
export const REPOSITORY_ROOT = join(HERE, '..', '..');

export const SUITE = 'bookworm';

/**
 * Debian packages installed on top of minbase (their dependencies come along; Recommends do not).
 * - systemd, systemd-sysv, udev, dbus: the init system; the kubelet and runc drive cgroups through
 *   systemd over D-Bus (the systemd cgroup driver).
 * - systemd-resolved: /etc/resolv.conf for the node and its pods from DHCP (networkd).
 * - linux-image-cloud-amd64: the kernel (LZ4; virtio as modules). Its modules stay in the root; the
 *   kernel image itself goes into the UKI.
 * - busybox-static: the initrd's shell and tools (the initrd is built from this root's files);
 *   systemd-boot-efi: systemd-stub, the UKI's EFI program. Both from the image's own packages, so
 *   the manifest names their versions.
 * - cryptsetup: veritysetup for the initrd, cryptsetup for the LUKS2 state disk.
 * - what kubeadm's preflight checks and the kubelet, kube-proxy and CNI need: iproute2, iptables,
 *   nftables, conntrack, ethtool, socat, util-linux, kmod, e2fsprogs, ca-certificates,
 *   containernetworking-plugins (bridge, host-local, portmap … in /usr/lib/cni).
 */
export const DEBIAN_PACKAGES = [
  'systemd',
  'systemd-sysv',
  'udev',
  'dbus',
  'systemd-resolved',
  'linux-image-cloud-amd64',
  'busybox-static',
  'systemd-boot-efi',
  'cryptsetup',
  'iproute2',
  'iptables',
  'nftables',
  'conntrack',
  'ethtool',
  'socat',
  'util-linux',
  'kmod',
  'e2fsprogs',
  'ca-certificates',
  'containernetworking-plugins',
] as const;

/** Only with --guest-agent: lets the host run programs in the guest (mini's VM machines). */
export const GUEST_AGENT_PACKAGE = 'qemu-guest-agent';

/** The Kubernetes build's programs the image carries (the container runtime); see rootfs-files.ts. */
export const RUNTIME_PROGRAMS = ['containerd', 'containerd-shim-runc-v2', 'ctr', 'runc'] as const;

/** The sources apt uses by default: this machine's own (Debian's archive, nothing else). */
export const DEFAULT_APT_SOURCES = '/etc/apt/sources.list.d/debian.sources';

/**
 * 2026-01-01T00:00:00Z: every timestamp in the image (files, squashfs, cpio, FAT). A constant and
 * not the last commit's time: a commit that changes nothing in the image must not change its hash.
 */
export const DEFAULT_SOURCE_DATE_EPOCH = 1_767_225_600;

/**
 * dm-verity's salt and the hash device's UUID. Fixed, so the same root filesystem always has the
 * same root hash. The salt keeps a precomputed hash tree of one image from serving another's
 * blocks; it need not be secret.
 */
export const VERITY = {
  salt: createHash('sha256').update('constellation-ts node image dm-verity salt v1').digest('hex'),
  uuid: 'c0a5e11a-7100-4d3e-9a1e-000000000001',
  hashAlgorithm: 'sha256',
  dataBlockSize: 4096,
  hashBlockSize: 4096,
} as const;

/** The ESP's FAT volume id and label. */
export const ESP = { volumeId: 'c0a5e11a', label: 'CONSTEL_ESP' } as const;

/**
 * The keys and certificates an image may carry, and where: the EK CA roots the bootstrapper checks
 * the JoinService's host against, the intermediates it sends with its EK certificate, and the
 * OpenPGP keyring node preparation checks the component manifest's signature with. Baked into the
 * root filesystem, so they are covered by its dm-verity root hash and thus by the measurements.
 */
export const TRUST_FILES = {
  ekRoots: { option: '--ek-roots', path: '/etc/constellation/ek-roots.pem', pem: 'CERTIFICATE' },
  ekIntermediates: {
    option: '--ek-intermediates',
    path: '/etc/constellation/ek-intermediates.pem',
    pem: 'CERTIFICATE',
  },
  artifactKeyring: {
    option: '--artifact-keyring',
    path: '/etc/constellation/pubring.asc',
    pem: 'PGP PUBLIC KEY BLOCK',
  },
} as const;
export type TrustFile = keyof typeof TRUST_FILES;

/** What a build is made from; everything here is part of the recipe hash. */
export interface RecipeInputs {
  /** The apt sources file mmdebstrap reads (deb822 or one-line format). */
  aptSources: string;
  /** The node .deb (bootstrapper and node preparation) and its SHA-256. */
  deb: { path: string; sha256: string };
  /**
   * The container runtime from the Kubernetes build, or undefined when the programs are not built;
   * `sandboxImage`: the build's pause image, containerd's pod sandbox (the node has no registry).
   */
  runtime: { binDir: string; release: string; sha256: Record<string, string>; sandboxImage: string } | undefined;
  /** What the image trusts, each installed under /etc/constellation when given (see TRUST_FILES). */
  trust: Partial<Record<TrustFile, { path: string; sha256: string }>>;
  guestAgent: boolean;
  sourceDateEpoch: number;
}

/** The versions of the host programs that write the image's bytes (a new version may change them). */
export async function hostToolVersions(): Promise<Record<string, string>> {
  const first = (text: string): string => text.split('\n').find((line) => line.trim() !== '') ?? '';
  const version = async (command: string, args: string[]): Promise<string> => {
    try {
      return first(await run(command, args)).trim();
    } catch (error) {
      return `unavailable: ${error instanceof Error ? (error.message.split('\n')[0] ?? '') : String(error)}`;
    }
  };
  return {
    mmdebstrap: await version('mmdebstrap', ['--version']),
    mksquashfs: await version('mksquashfs', ['-version']),
    veritysetup: await version('veritysetup', ['--version']),
    objcopy: await version('objcopy', ['--version']),
    cpio: await version('cpio', ['--version']),
    zstd: await version('zstd', ['--version']),
    'mkfs.vfat': await dpkgVersion('dosfstools'),
    mtools: await version('mcopy', ['--version']),
  };
}

async function dpkgVersion(name: string): Promise<string> {
  try {
    return `${name} ${(await run('dpkg-query', ['-W', '-f=${Version}', name])).trim()}`;
  } catch {
    return `${name} unavailable`;
  }
}

/** The files of this folder that make the build (everything but tests and docs). */
async function recipeFiles(): Promise<string[]> {
  const entries = await readdir(HERE, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile() && !e.name.endsWith('.test.ts') && !e.name.endsWith('.md'))
    .map((e) => join(e.parentPath, e.name))
    .sort();
}

/**
 * The recipe hash: this folder's build files, the package list, the apt sources, the inputs'
 * digests, the options and the host tools' versions. The first 16 hex digits name the cache
 * directory. (Debian publishing new package versions under the same sources does not change it:
 * `--rebuild` picks those up.)
 */
export async function recipeHash(inputs: RecipeInputs, tools: Record<string, string>): Promise<string> {
  const hash = createHash('sha256');
  for (const file of await recipeFiles()) {
    hash.update(`file ${file.slice(HERE.length)}\n`).update(await readFile(file));
  }
  hash.update(`packages ${DEBIAN_PACKAGES.join(',')}\n`);
  hash.update(`sources\n${await readFile(inputs.aptSources, 'utf8')}\n`);
  hash.update(`deb ${inputs.deb.sha256}\n`);
  if (inputs.runtime !== undefined) {
    hash.update(`kubernetes ${inputs.runtime.release}\n`);
    for (const name of Object.keys(inputs.runtime.sha256).sort()) {
      hash.update(`program ${name} ${inputs.runtime.sha256[name] ?? ''}\n`);
    }
  }
  hash.update(`sandbox ${inputs.runtime?.sandboxImage ?? 'none'}\n`);
  for (const file of Object.keys(TRUST_FILES).sort() as TrustFile[]) {
    hash.update(`trust ${file} ${inputs.trust[file]?.sha256 ?? 'none'}\n`);
  }
  hash.update(`guest-agent ${inputs.guestAgent}\nepoch ${inputs.sourceDateEpoch}\n`);
  for (const name of Object.keys(tools).sort()) hash.update(`tool ${name} ${tools[name] ?? ''}\n`);
  return hash.digest('hex').slice(0, 16);
}
