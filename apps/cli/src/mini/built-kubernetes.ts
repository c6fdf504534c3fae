import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { UsageError } from '@constellation/command-line';
import { constellationCacheDir, pathExists } from '@constellation/files';

/** The directory `node tools/kubernetes/build.mjs` builds into. */
export const kubernetesCacheDir = (env: NodeJS.ProcessEnv = process.env): string =>
  join(constellationCacheDir(env), 'kubernetes');

/** A build directory's name: `<release>-<recipe hash>` (build.mjs keeps one per release). */
const BUILD_NAME = /^v(\d+)\.(\d+)\.(\d+)-[0-9a-f]+$/;

interface Build {
  binDir: string;
  version: [number, number, number];
}

const newer = (a: Build, b: Build): number =>
  b.version[0] - a.version[0] || b.version[1] - a.version[1] || b.version[2] - a.version[2];

/**
 * The programs directory of the newest release built in `cacheDir`, with the node images mini
 * needs beside it; refused, naming the cache and the command that builds them, when there is none.
 * What `mini up` runs when no `--kubernetes-bin-dir` is given.
 */
export async function findBuiltKubernetes(cacheDir: string = kubernetesCacheDir()): Promise<string> {
  const entries = await readdir(cacheDir, { withFileTypes: true }).catch(() => []);
  const builds: Build[] = [];
  for (const entry of entries) {
    const match = BUILD_NAME.exec(entry.name);
    if (!entry.isDirectory() || match === null) continue;
    const binDir = join(cacheDir, entry.name, 'bin');
    // build.mjs writes release.json last, and images.mjs its images.json last: both there, both done.
    const built =
      (await pathExists(join(binDir, 'release.json'))) &&
      (await pathExists(join(cacheDir, entry.name, 'images', 'images.json')));
    if (!built) continue;
    builds.push({ binDir, version: [Number(match[1]), Number(match[2]), Number(match[3])] });
  }
  const newest = builds.sort(newer)[0];
  if (newest !== undefined) return newest.binDir;
  throw new UsageError(
    `mini up needs the built Kubernetes programs and node images, and ${cacheDir} has none: run \`npm run mini\` in the checkout (it builds what is missing, about 15 min the first time, and brings mini up), or pass --kubernetes-bin-dir DIR`,
  );
}
