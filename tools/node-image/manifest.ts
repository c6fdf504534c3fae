// manifest.json: what an image holds and what it measures. Package versions from the image's own
// dpkg database, the dm-verity root hash and parameters, the kernel command line, and each
// output's size and SHA-256.
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { sha256File } from '@constellation/files';

export const MANIFEST_KIND = 'constellation-node-image-manifest-v1';

export interface ImageManifest {
  kind: typeof MANIFEST_KIND;
  /** The recipe hash that names the image's cache directory. */
  recipe: string;
  sourceDateEpoch: number;
  suite: string;
  kernel: { version: string; package: string };
  cmdline: string;
  verity: {
    rootHash: string;
    salt: string;
    uuid: string;
    hashAlgorithm: string;
    dataBlockSize: number;
    hashBlockSize: number;
    dataBlocks: number;
  };
  /** The output files: size in bytes and SHA-256. */
  files: Record<string, { bytes: number; sha256: string }>;
  /** Every Debian package installed in the image (dpkg status), name → version. */
  packages: Record<string, string>;
  /** Programs in the image that no package installed (the container runtime), path → SHA-256. */
  programs: Record<string, string>;
  /** The Kubernetes release the container runtime came from, and where kubeadm and the kubelet come from. */
  kubernetes: { release: string | null; kubeadmAndKubelet: string };
  /** Host programs that wrote the image's bytes. */
  tools: Record<string, string>;
  /** The os-release facts node preparation asks the artifact host for (VERSION_ID: the manifest's osVersion). */
  osRelease: { versionId: string };
  /** SHA-256 of each trust file the image carries (TRUST_FILES), null where it carries none. */
  trust: Record<string, string | null>;
}

/** Installed packages from a dpkg status file: name (with `:arch` when not the native one) → version. */
export async function installedPackages(root: string): Promise<Record<string, string>> {
  const status = await readFile(join(root, 'var', 'lib', 'dpkg', 'status'), 'utf8');
  const packages: Record<string, string> = {};
  for (const stanza of status.split(/\n\n+/)) {
    const field = (name: string): string | undefined => new RegExp(`^${name}: (.*)$`, 'm').exec(stanza)?.[1];
    const name = field('Package');
    const version = field('Version');
    const state = field('Status');
    if (name === undefined || version === undefined || state?.endsWith(' installed') !== true) continue;
    packages[name] = version;
  }
  return Object.fromEntries(Object.entries(packages).sort(([a], [b]) => (a < b ? -1 : 1)));
}

/** Size and SHA-256 of each named file in `dir`. */
export async function describeFiles(
  dir: string,
  names: readonly string[],
): Promise<Record<string, { bytes: number; sha256: string }>> {
  const files: Record<string, { bytes: number; sha256: string }> = {};
  for (const name of names) {
    files[name] = { bytes: (await stat(join(dir, name))).size, sha256: await sha256File(join(dir, name)) };
  }
  return files;
}

export async function writeManifest(dir: string, manifest: ImageManifest): Promise<void> {
  await writeFile(join(dir, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
}

/** Reads an image directory's manifest.json (the cache's mark that the image is complete). */
export async function readManifest(dir: string): Promise<ImageManifest> {
  const manifest = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')) as { kind?: unknown };
  if (manifest.kind !== MANIFEST_KIND) throw new Error(`${dir}/manifest.json is not a ${MANIFEST_KIND}`);
  return manifest as ImageManifest;
}
