import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { BootComponent } from '@constellation/attestation';
import { UsageError } from '@constellation/command-line';
import { imageBootComponents } from '@constellation/measured-boot';
import { imageTrustDigests, imageTrustOptions } from './vendor.js';
import type { MiniVendor } from './vendor.js';

/** A node image (`npm run node-image`) as mini's VMs boot it. */
export interface VmImage {
  dir: string;
  esp: string;
  root: string;
  verity: string;
  uki: string;
  /** The image's VERSION_ID: node preparation asks the artifact host for this OS version's manifest. */
  osVersion: string;
  /** What the firmware measures when it boots the image: PCRs 4, 9 and 11, predicted from the UKI. */
  boot: BootComponent[];
}

interface ImageManifestFields {
  kind?: unknown;
  osRelease?: { versionId?: unknown };
  trust?: Record<string, unknown>;
  packages?: Record<string, unknown>;
}

/** The command that builds the image mini needs (printed where one is missing or trusts another vendor). */
export function vmImageBuildCommand(vendor: MiniVendor): string {
  return ['npm run node-image --', '--guest-agent', ...imageTrustOptions(vendor)].join(' ');
}

/**
 * Opens a built node image for mini's VMs: its files, its OS version, and the boot chain its
 * firmware will measure, computed from the UKI (never from a boot). Refuses an image that does
 * not trust mini's vendor (its nodes would refuse the control planes' TPMs and the component
 * manifests), naming the command that builds one that does.
 */
export async function openVmImage(dir: string, vendor: MiniVendor): Promise<VmImage> {
  const root = resolve(dir);
  const build = vmImageBuildCommand(vendor);
  const manifestPath = join(root, 'manifest.json');
  const text = await readFile(manifestPath, 'utf8').catch(() => {
    throw new UsageError(`--node-image ${dir}: no manifest.json there; build the image with \`${build}\``);
  });
  const manifest = JSON.parse(text) as ImageManifestFields;
  if (manifest.kind !== 'constellation-node-image-manifest-v1')
    throw new UsageError(`--node-image ${dir}: ${manifestPath} is not a node image manifest`);
  const osVersion = manifest.osRelease?.versionId;
  if (typeof osVersion !== 'string')
    throw new UsageError(
      `--node-image ${dir}: built by an older recipe (its manifest names no OS version); rebuild with \`${build}\``,
    );
  if (manifest.packages?.['qemu-guest-agent'] === undefined)
    throw new UsageError(
      `--node-image ${dir}: the image has no qemu-guest-agent, through which mini reaches a VM's programs; build one with \`${build}\``,
    );
  const expected = await imageTrustDigests(vendor);
  for (const [name, digest] of Object.entries(expected)) {
    if (manifest.trust?.[name] !== digest)
      throw new UsageError(
        `--node-image ${dir}: the image does not carry mini's ${name} (${vendor.dir}); its nodes would refuse this cluster. Build one that does: \`${build}\``,
      );
  }
  const files = {
    esp: join(root, 'esp.img'),
    root: join(root, 'root.img'),
    verity: join(root, 'root.verity'),
    uki: join(root, 'uki.efi'),
  };
  for (const file of Object.values(files))
    if (!existsSync(file)) throw new UsageError(`--node-image ${dir}: ${file} is missing; rebuild with \`${build}\``);
  return { dir: root, ...files, osVersion, boot: imageBootComponents(await readFile(files.uki)) };
}
