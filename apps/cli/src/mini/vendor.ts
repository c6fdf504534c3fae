import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { createEkCa, openEkCa } from '@constellation/swtpm';
import type { EkCa } from '@constellation/swtpm';
import { generateManifestSigningKey } from './signed-components.js';
import type { ManifestSigningKey } from './signed-components.js';

/**
 * mini's stand-in for the parties a node image trusts: the TPM vendor (an EK CA that manufactures
 * every TPM of a cluster with VMs) and the publisher of the node components (the OpenPGP key that
 * signs the component manifests). A node image carries their public halves in its verified root,
 * so they must outlive a cluster: one image, built once, serves every mini cluster on this machine.
 * Private keys stay here (mode 0600, directory 0700), never on a node or the artifact host.
 */
export interface MiniVendor {
  dir: string;
  ekCa: EkCa;
  manifestKey: ManifestSigningKey;
  /** The files a node image for mini carries, by the image build's option. */
  imageTrust: { ekRoots: string; ekIntermediates: string; artifactKeyring: string };
}

/** `$CONSTELLATION_MINI_VENDOR_DIR`, or `${XDG_CONFIG_HOME:-~/.config}/constellation/mini-vendor`. */
export function miniVendorDir(): string {
  const configured = process.env['CONSTELLATION_MINI_VENDOR_DIR'];
  if (configured !== undefined && configured !== '') return configured;
  return join(process.env['XDG_CONFIG_HOME'] ?? join(homedir(), '.config'), 'constellation', 'mini-vendor');
}

/** The vendor in `dir`, created on first use. */
export async function openMiniVendor(dir = miniVendorDir()): Promise<MiniVendor> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const caDir = join(dir, 'ek-ca');
  const ekCa = existsSync(caDir)
    ? await openEkCa(caDir)
    : await createEkCa(caDir, { name: 'constellation mini vendor' });
  const privatePath = join(dir, 'manifest-signing-key.asc');
  const publicPath = join(dir, 'manifest-signing-key.pub.asc');
  if (!existsSync(privatePath) || !existsSync(publicPath)) {
    const key = await generateManifestSigningKey();
    await writeFile(publicPath, key.publicKey, { mode: 0o644 });
    await writeFile(privatePath, key.privateKey, { mode: 0o600 });
  }
  return {
    dir,
    ekCa,
    manifestKey: { privateKey: await readFile(privatePath, 'utf8'), publicKey: await readFile(publicPath, 'utf8') },
    imageTrust: {
      ekRoots: ekCa.rootCertPath,
      ekIntermediates: ekCa.intermediateCertPath,
      artifactKeyring: publicPath,
    },
  };
}

/** The image build's options that make an image trust this vendor (tools/node-image, `npm run node-image`). */
export function imageTrustOptions(vendor: MiniVendor): string[] {
  const { ekRoots, ekIntermediates, artifactKeyring } = vendor.imageTrust;
  return ['--ek-roots', ekRoots, '--ek-intermediates', ekIntermediates, '--artifact-keyring', artifactKeyring];
}

/** SHA-256 (hex) of each trust file, as an image's manifest.json records the ones it carries. */
export async function imageTrustDigests(vendor: MiniVendor): Promise<Record<string, string>> {
  const digests: Record<string, string> = {};
  for (const [name, path] of Object.entries(vendor.imageTrust)) {
    digests[name] = createHash('sha256')
      .update(await readFile(path))
      .digest('hex');
  }
  return digests;
}
