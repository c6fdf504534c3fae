import { createHash } from 'node:crypto';
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Logger } from '@constellation/logger';
import type { ManifestComponent } from './component-manifest.js';
import { fetchBytes } from './fetch-with-retry.js';
import type { RetryPolicy } from './fetch-with-retry.js';

function digestOf(bytes: Buffer, algorithm: string): string {
  return `${algorithm}:${createHash(algorithm).update(bytes).digest('hex')}`;
}

async function atomicWrite(path: string, bytes: Buffer, mode: number): Promise<string> {
  await mkdir(dirname(path), { recursive: true });
  const temp = join(dirname(path), `.${Date.now()}-${process.pid}.partial`);
  const handle = await open(temp, 'w', mode);
  try {
    await handle.writeFile(bytes);
    await handle.sync();
  } finally {
    await handle.close();
  }
  return temp;
}

/**
 * Installs components under `root` by digest. Everything is downloaded and checked first; only
 * when every artifact matches its digest are the files moved into place (temp file, fsync,
 * rename), so a tampered or missing artifact installs nothing. A file already in place with the
 * right digest is kept. Returns whether anything changed.
 */
export async function installComponents(
  root: string,
  components: readonly ManifestComponent[],
  retry: RetryPolicy,
  logger: Logger,
): Promise<boolean> {
  const staged: { temp: string; target: string }[] = [];
  try {
    for (const component of components) {
      const target = join(root, component.installPath);
      const algorithm = component.hash.split(':')[0] ?? 'sha256';
      const existing = await readFile(target).catch(() => undefined);
      if (existing !== undefined && digestOf(existing, algorithm) === component.hash) {
        logger.info('component already installed', { component: component.name, path: component.installPath });
        continue;
      }
      const bytes = await fetchBytes(component.url, retry);
      const actual = digestOf(bytes, algorithm);
      if (actual !== component.hash)
        throw new Error(
          `component ${component.name} from ${component.url} has digest ${actual}, the manifest says ${component.hash}`,
        );
      staged.push({ temp: await atomicWrite(target, bytes, component.mode), target });
    }
    for (const { temp, target } of staged) await rename(temp, target);
    for (const { target } of staged) logger.info('component installed', { path: target.slice(root.length) || target });
    return staged.length > 0;
  } catch (err) {
    await Promise.all(staged.map(({ temp }) => rm(temp, { force: true })));
    throw err;
  }
}
