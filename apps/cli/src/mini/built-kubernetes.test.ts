import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tempDirForTest } from '@constellation/testing';
import { describe, expect, it } from 'vitest';
import { findBuiltKubernetes, kubernetesCacheDir } from './built-kubernetes.js';

/** A build as build.mjs and images.mjs leave it: release.json in bin/, images.json in images/ (each written last). */
async function build(cache: string, name: string, parts: { release: boolean; images: boolean }): Promise<string> {
  const binDir = join(cache, name, 'bin');
  await mkdir(binDir, { recursive: true });
  await mkdir(join(cache, name, 'images'), { recursive: true });
  if (parts.release) await writeFile(join(binDir, 'release.json'), '{}');
  if (parts.images) await writeFile(join(cache, name, 'images', 'images.json'), '{}');
  return binDir;
}

describe('the Kubernetes programs mini up takes without --kubernetes-bin-dir', () => {
  it('are the newest release whose programs and node images are both built', async () => {
    const cache = await tempDirForTest();
    await build(cache, 'v1.36.3-0123456789ab', { release: true, images: true });
    const newest = await build(cache, 'v1.37.2-e06e6ba8325d', { release: true, images: true });
    // Newer, but half-built: the programs without images, or the build still running.
    await build(cache, 'v1.37.10-aaaaaaaaaaaa', { release: true, images: false });
    await build(cache, 'v1.38.0-bbbbbbbbbbbb', { release: false, images: true });
    await mkdir(join(cache, 'v1.39.0-cccccccccccc.partial-123'), { recursive: true });
    expect(await findBuiltKubernetes(cache)).toBe(newest);
  });

  it('are refused, naming the cache and the command that builds them, when none is complete', async () => {
    const cache = await tempDirForTest();
    await build(cache, 'v1.37.2-e06e6ba8325d', { release: true, images: false });
    await expect(findBuiltKubernetes(cache)).rejects.toThrow(
      `mini up needs the built Kubernetes programs and node images, and ${cache} has none: run \`npm run mini\` in the checkout`,
    );
  });

  it('are looked for where build.mjs puts them', () => {
    expect(kubernetesCacheDir({ CONSTELLATION_CACHE_DIR: '/c' })).toBe('/c/kubernetes');
    expect(kubernetesCacheDir({ XDG_CACHE_HOME: '/x', CONSTELLATION_CACHE_DIR: '' })).toBe(
      '/x/constellation/kubernetes',
    );
  });
});
