import { createHash } from 'node:crypto';
import { readFile, readdir } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { componentDigest } from '@constellation/attestation';
import type { BootComponent } from '@constellation/attestation';

/**
 * Every file of the bootstrapper, relative to its directory, in byte order of the path: the entry
 * bundle, the chunks it imports later (chunks/) and their source maps. Node can load any of them.
 */
export async function bootstrapperFiles(bundle: string): Promise<string[]> {
  const dir = dirname(bundle);
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => !entry.isDirectory())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)))
    .sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
}

/**
 * The bootstrapper measured as one component: SHA-256 over a "<sha256 hex>  <path>" line per file
 * (the sha256sum format), so changing, adding, removing or renaming any file the bootstrapper can
 * load changes the measurement.
 */
export async function bootstrapperDigest(bundle: string): Promise<Buffer> {
  const dir = dirname(bundle);
  const lines: string[] = [];
  for (const file of await bootstrapperFiles(bundle)) {
    const digest = createHash('sha256')
      .update(await readFile(join(dir, file)))
      .digest('hex');
    lines.push(`${digest}  ${file}\n`);
  }
  return componentDigest(lines.join(''));
}

/** The node image's boot chain: a fixed "kernel" and the bootstrapper (bundle and chunks) the node runs. */
export async function bootChain(bundle: string): Promise<BootComponent[]> {
  return [
    { pcr: 4, description: 'kernel', digest: componentDigest('constellation mini node image v1') },
    { pcr: 9, description: 'bootstrapper bundle', digest: await bootstrapperDigest(bundle) },
  ];
}
