// Container images built without a registry: FROM scratch (or a base built before), a root file
// system added as one tar archive, pushed to an OCI archive that a node imports with `ctr images
// import`. A fixed timestamp, so the same inputs give the same image digests.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runBuildStep } from './cached-build.js';

/** Where buildah keeps its images during one build: its own storage (vfs works everywhere), removed afterwards. */
export function buildahStorage(work: string): string[] {
  return ['--root', join(work, 'storage'), '--runroot', join(work, 'runroot'), '--storage-driver', 'vfs'];
}

/** An image's archive file name: its reference with what a file name cannot hold replaced. */
export function archiveName(reference: string): string {
  return `${reference.replace(/[^a-z0-9.-]+/gi, '_')}.oci.tar`;
}

export interface ImageRecipe {
  /** The name it is tagged and imported under, e.g. registry.k8s.io/pause:3.10.2. */
  reference: string;
  /** A directory with its files (removed once added), or undefined for none. */
  rootfs: string | undefined;
  /** Containerfile lines after the files: ENTRYPOINT, USER, ENV... */
  config: readonly string[];
  /** Its base: scratch, or an image built earlier in the same storage. */
  from?: string;
}

/** Builds `image` in `storage` and pushes it to `out`; returns the archive's file name. */
export async function buildImage(
  storage: readonly string[],
  scratch: string,
  out: string,
  image: ImageRecipe,
): Promise<string> {
  const from = image.from ?? 'scratch';
  const context = join(scratch, 'contexts', archiveName(image.reference));
  mkdirSync(context, { recursive: true });
  const lines = [`FROM ${from}`];
  if (image.rootfs !== undefined) {
    // ADD of a tar archive keeps every mode bit (setuid programs); buildah's COPY drops setuid.
    await runBuildStep('tar', ['-C', image.rootfs, '--numeric-owner', '-cf', join(context, 'rootfs.tar'), '.']);
    rmSync(image.rootfs, { recursive: true, force: true });
    lines.push('ADD rootfs.tar /');
  }
  if (from === 'scratch') lines.push('ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin');
  lines.push(...image.config, '');
  writeFileSync(join(context, 'Containerfile'), lines.join('\n'));
  await runBuildStep('buildah', [
    ...storage,
    'bud',
    '--quiet',
    '--layers=false',
    '--pull-never',
    '--timestamp=0',
    '--file',
    join(context, 'Containerfile'),
    '--tag',
    image.reference,
    context,
  ]);
  rmSync(context, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const archive = archiveName(image.reference);
  await runBuildStep('buildah', [
    ...storage,
    'push',
    '--quiet',
    image.reference,
    `oci-archive:${join(out, archive)}:${image.reference}`,
  ]);
  return archive;
}
