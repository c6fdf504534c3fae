import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runProgram } from '@constellation/process';

/** An image as an OCI archive (`oci-archive` tar: index.json, blobs/sha256/…) and the name it serves under. */
export interface RegistryImage {
  /** The full reference, registry host included: `registry.k8s.io/e2e-test-images/kitten:1.8`. */
  reference: string;
  archive: string;
}

/** An OCI content descriptor: what a manifest is, where, and how long. */
export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
}

export const SHA256_DIGEST = /^sha256:([a-f0-9]{64})$/;

/** How long reading one archive may take (the largest test images are a few hundred MB). */
const TAR_BOUND_MS = 5 * 60_000;

/** `registry.k8s.io/e2e-test-images/kitten:1.8` → host, repository and tag. */
export function parseReference(reference: string): { host: string; repository: string; tag: string } {
  const match = /^([^/]+)\/(.+):([\w][\w.-]{0,127})$/.exec(reference);
  if (match === null) throw new Error(`image reference ${JSON.stringify(reference)} is not host/repository:tag`);
  const [, host = '', repository = '', tag = ''] = match;
  return { host, repository, tag };
}

/** Runs tar with `args`; resolves to its output, rejects naming the archive and tar's complaint. */
async function tar(archive: string, args: readonly string[]): Promise<string> {
  try {
    return (await runProgram('tar', args, { timeoutMs: TAR_BOUND_MS })).stdout;
  } catch (error) {
    throw new Error(`reading ${archive} failed: ${(error as Error).message}`, { cause: error });
  }
}

/** The image manifest an OCI archive holds: its index.json's only entry. */
export async function readArchiveManifest(archive: string): Promise<Descriptor> {
  const index = JSON.parse(await tar(archive, ['-xOf', archive, 'index.json'])) as { manifests?: Descriptor[] };
  const manifest = index.manifests?.[0];
  if (manifest === undefined || !SHA256_DIGEST.test(manifest.digest)) {
    throw new Error(`${archive} holds no image manifest (index.json has no sha256 entry)`);
  }
  return manifest;
}

/** The images' manifests by tag and digest, and their blobs unpacked into one directory. */
export interface ImageStore {
  /** The registry hosts the images name (`registry.k8s.io`), in the order they first appear. */
  upstreams: string[];
  /** The manifest `<upstream>/<repository>:<reference>` names (a tag, or a digest of any image). */
  manifest(upstream: string, repository: string, reference: string): Descriptor | undefined;
  /** The file holding blob `hex` (a sha256 digest's hex), and its size; undefined when there is none. */
  blob(hex: string): Promise<{ file: string; size: number } | undefined>;
  remove(): Promise<void>;
}

/**
 * Unpacks each archive's blobs once into a directory of the store's own (equal digests are equal
 * content), removed by `remove()` or when an archive cannot be read.
 */
export async function openImageStore(images: readonly RegistryImage[]): Promise<ImageStore> {
  const scratch = await mkdtemp(join(tmpdir(), 'image-registry-'));
  const blobs = join(scratch, 'blobs', 'sha256');
  /** `<host>/<repository>:<tag>` → the image's manifest. */
  const tags = new Map<string, Descriptor>();
  const byDigest = new Map<string, Descriptor>();
  try {
    for (const image of images) {
      const { host, repository, tag } = parseReference(image.reference);
      const manifest = await readArchiveManifest(image.archive);
      await tar(image.archive, ['-xf', image.archive, '-C', scratch, 'blobs']);
      tags.set(`${host}/${repository}:${tag}`, manifest);
      byDigest.set(manifest.digest, manifest);
    }
  } catch (error) {
    await rm(scratch, { recursive: true, force: true });
    throw error;
  }
  return {
    upstreams: [...new Set(images.map((image) => parseReference(image.reference).host))],
    manifest: (upstream, repository, reference) =>
      SHA256_DIGEST.test(reference) ? byDigest.get(reference) : tags.get(`${upstream}/${repository}:${reference}`),
    async blob(hex) {
      const file = join(blobs, hex);
      try {
        return { file, size: (await stat(file)).size };
      } catch {
        return undefined;
      }
    },
    remove: () => rm(scratch, { recursive: true, force: true }),
  };
}
