import { mkdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { sha256File } from '@constellation/files';
import { join } from 'node:path';
import * as openpgp from 'openpgp';

export const MINI_OS = { version: '1.0.0', board: process.arch === 'arm64' ? 'arm64-usr' : 'amd64-usr' };

/** What node preparation installs on a mini node: the release's kubeadm and kubelet, built here. */
export const NODE_COMPONENTS = ['kubeadm', 'kubelet'] as const;

/** Where node preparation puts the components (on the node's state partition, first on its PATH). */
export const componentPath = (name: string): string => `/run/state/bin/${name}`;

/** A component's digest as its manifest names it (`sha256:<hex>`), and its size. */
async function componentDigest(path: string): Promise<{ hash: string; size: number }> {
  const [hex, { size }] = await Promise.all([sha256File(path), stat(path)]);
  return { hash: `sha256:${hex}`, size };
}

/** An armored OpenPGP key pair that signs the component manifests. */
export interface ManifestSigningKey {
  privateKey: string;
  publicKey: string;
}

/** A new signing key, for one cluster (mini without VMs: the namespace nodes get its public key). */
export async function generateManifestSigningKey(): Promise<ManifestSigningKey> {
  const { privateKey, publicKey } = await openpgp.generateKey({
    type: 'curve25519',
    userIDs: [{ name: 'constellation mini', email: 'mini@constellation.invalid' }],
    format: 'armored',
  });
  return { privateKey, publicKey };
}

/** The manifests mini's artifact host publishes: one per OS version its nodes run. */
const manifestDir = (artifactsDir: string, osVersion: string): string =>
  join(artifactsDir, 'manifests', MINI_OS.board, osVersion);

/**
 * mini's artifact host content: the real kubeadm and kubelet as the components node preparation
 * installs, listed in a manifest for each OS version (mini's namespace nodes', a node image's).
 * The programs are linked, not copied: the host serves them read-only and nodes check every
 * byte's digest. The signing key stays out of the served directory.
 */
export async function publishComponents(
  artifactsDir: string,
  kubernetesBinDir: string,
  kubernetesVersion: string,
  osVersions: readonly string[],
): Promise<void> {
  await mkdir(join(artifactsDir, 'pkgs'), { recursive: true });
  const components = [];
  for (const name of NODE_COMPONENTS) {
    const program = join(kubernetesBinDir, name);
    await symlink(program, join(artifactsDir, 'pkgs', name));
    const { hash, size } = await componentDigest(program);
    components.push({ name, url: `ARTIFACTS/pkgs/${name}`, hash, size, installPath: componentPath(name), mode: 0o755 });
  }
  for (const osVersion of new Set(osVersions)) {
    const manifest = Buffer.from(
      JSON.stringify({
        kind: 'constellation-component-manifest-v2',
        // Seconds since the epoch: each manifest mini signs has a higher serial than the last.
        serial: Math.floor(Date.now() / 1000),
        // Long enough for a mini cluster's life; past it, nodes refuse the manifest (freeze protection).
        expires: new Date(Date.now() + 365 * 86_400_000).toISOString(),
        board: MINI_OS.board,
        osVersion,
        kubernetesVersion,
        components,
      }),
    );
    const dir = manifestDir(artifactsDir, osVersion);
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, `${kubernetesVersion}.json.template`), manifest);
  }
}

/** Fills in the artifact host's URL and signs each manifest (the URL is known once the host listens). */
export async function signManifests(
  artifactsDir: string,
  kubernetesVersion: string,
  osVersions: readonly string[],
  artifactsUrl: string,
  key: ManifestSigningKey,
): Promise<void> {
  const signingKey = await openpgp.readPrivateKey({ armoredKey: key.privateKey });
  for (const osVersion of new Set(osVersions)) {
    const dir = manifestDir(artifactsDir, osVersion);
    const manifest = Buffer.from(
      (await readFile(join(dir, `${kubernetesVersion}.json.template`), 'utf8')).replaceAll(
        'ARTIFACTS/',
        `${artifactsUrl}/`,
      ),
    );
    await writeFile(join(dir, `${kubernetesVersion}.json`), manifest);
    // openpgp's return type names web-stream types outside our lib set; armored output is a string.
    const signature = (await openpgp.sign({
      message: await openpgp.createMessage({ binary: manifest }),
      signingKeys: signingKey,
      detached: true,
      format: 'armored',
    })) as unknown as string;
    await writeFile(join(dir, `${kubernetesVersion}.json.asc`), signature);
  }
}
