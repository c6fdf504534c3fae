import { stat, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { buildJoinServiceImage } from './container-image.js';
import type { BuiltImage } from './container-image.js';
import { buildExecutable } from './executable.js';
import { sha256File } from '@constellation/files';
import { buildNodePackage } from './node-package.js';
import { BOOTSTRAPPER, EXECUTABLE_PROGRAMS, NODE_PREP } from './programs.js';
import type { Program } from './programs.js';

export interface ReleaseArtifact {
  file: string;
  bytes: number;
  sha256: string;
}

export interface Release {
  artifacts: ReleaseArtifact[];
  image: BuiltImage;
}

/**
 * Builds every artifact users deploy into `outDir`: one executable per program, the node .deb,
 * the JoinService image (as an OCI archive, plus its digest and a pinned kustomization), and a
 * SHA256SUMS file over all of them.
 */
export async function buildRelease(outDir: string): Promise<Release> {
  const executables = new Map<Program, string>();
  for (const program of EXECUTABLE_PROGRAMS) executables.set(program, await buildExecutable(program, outDir));
  const deb = await buildNodePackage(
    { bootstrapper: executables.get(BOOTSTRAPPER) ?? '', nodePrep: executables.get(NODE_PREP) ?? '' },
    outDir,
  );
  const image = await buildJoinServiceImage(outDir);
  const files = [...executables.values(), deb, image.archive];
  const artifacts = await Promise.all(
    files.map(async (file) => ({ file, bytes: (await stat(file)).size, sha256: await sha256File(file) })),
  );
  // The format `sha256sum --check SHA256SUMS` reads.
  await writeFile(join(outDir, 'SHA256SUMS'), artifacts.map((a) => `${a.sha256}  ${basename(a.file)}\n`).join(''));
  return { artifacts, image };
}

/** The release as a release page lists it: name, size, SHA-256; then the image by digest. */
export function formatRelease(release: Release, heading: string): string {
  const nameWidth = Math.max(...release.artifacts.map((a) => basename(a.file).length), 'Artifact'.length);
  const size = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`.padStart(10);
  return [
    heading,
    '',
    `${'Artifact'.padEnd(nameWidth)}  ${'Size'.padStart(10)}  SHA-256`,
    ...release.artifacts.map((a) => `${basename(a.file).padEnd(nameWidth)}  ${size(a.bytes)}  ${a.sha256}`),
    '',
    `Container image: ${release.image.reference}@${release.image.digest}`,
    '',
  ].join('\n');
}
