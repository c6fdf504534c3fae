// Where built images live: $CONSTELLATION_CACHE_DIR or ${XDG_CACHE_HOME:-~/.cache}/constellation,
// then node-image/<recipe hash>/ (as tools/kubernetes/build.mjs keeps the Kubernetes programs).
import { existsSync } from 'node:fs';
import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { constellationCacheDir } from '@constellation/files';
import { isRunning } from '@constellation/process';

/** How many images of other recipes stay in the cache besides the current one. */
const KEEP_OTHER_RECIPES = 3;

export function imageCacheDir(): string {
  return join(constellationCacheDir(), 'node-image');
}

/**
 * Removes builds cut off earlier (work directories of processes no longer running) and all but
 * the newest few images of other recipes (each holds a few hundred MB).
 */
export async function pruneCache(dir: string, keep: string): Promise<void> {
  if (!existsSync(dir)) return;
  const images: { name: string; mtimeMs: number }[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const partial = /^[0-9a-f]{16}\.partial-(\d+)$/.exec(entry.name);
    if (partial?.[1] !== undefined) {
      if (!isRunning(Number(partial[1]))) await rm(join(dir, entry.name), { recursive: true, force: true });
    } else if (/^[0-9a-f]{16}$/.test(entry.name) && entry.name !== keep) {
      images.push({ name: entry.name, mtimeMs: (await stat(join(dir, entry.name))).mtimeMs });
    }
  }
  images.sort((a, b) => b.mtimeMs - a.mtimeMs);
  for (const image of images.slice(KEEP_OTHER_RECIPES)) {
    await rm(join(dir, image.name), { recursive: true, force: true });
  }
}
