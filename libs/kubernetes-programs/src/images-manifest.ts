import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';

/** One image of a build: the name it is imported under and its OCI archive. */
export interface ImageArchive {
  /** For example registry.k8s.io/pause:3.10.2. */
  reference: string;
  /** The archive's file name, relative to the images directory. */
  archive: string;
}

/**
 * `images.json`, written last into an images directory: beside the Kubernetes programs by
 * tools/kubernetes/images.ts (the images mini's nodes carry) and into the conformance suite's
 * by tools/kubernetes/conformance-build.ts (which adds what it did not build, and why).
 */
export interface ImagesManifest {
  /** The Kubernetes release the images belong to, e.g. v1.37.2. */
  release: string;
  /** The hash of the recipe that built them (a changed recipe builds them again). */
  recipe: string;
  images: ImageArchive[];
}

/** The images directory beside a build's programs directory. */
export function imagesDirBeside(binDir: string): string {
  return join(dirname(binDir), 'images');
}

function isImageArchive(value: unknown): value is ImageArchive {
  const image = value as Partial<ImageArchive> | null;
  return typeof image?.reference === 'string' && typeof image.archive === 'string';
}

/**
 * Reads `dir`'s images.json. Fails saying what is wrong and what to run: missing (`buildCommand`,
 * the command that builds them, then `hint`), or not of this shape (`buildCommand --rebuild`).
 */
export async function readImagesManifest(dir: string, buildCommand: string, hint = ''): Promise<ImagesManifest> {
  const path = join(dir, 'images.json');
  const text = await readFile(path, 'utf8').catch(() => {
    throw new Error(`no images in ${dir} (no images.json): run \`${buildCommand}\`${hint === '' ? '' : ` ${hint}`}`);
  });
  let manifest: Partial<ImagesManifest>;
  try {
    manifest = JSON.parse(text) as Partial<ImagesManifest>;
  } catch (error) {
    throw new Error(`${path} is not JSON (${(error as Error).message}): run \`${buildCommand} --rebuild\``, {
      cause: error,
    });
  }
  if (typeof manifest.release !== 'string' || !Array.isArray(manifest.images) || !manifest.images.every(isImageArchive))
    throw new Error(
      `${path} does not list a release and its images ({reference, archive}): run \`${buildCommand} --rebuild\``,
    );
  return { release: manifest.release, recipe: manifest.recipe ?? '', images: manifest.images };
}

/** The archive's path in `dir`. */
export function archivePath(dir: string, image: ImageArchive): string {
  return join(dir, image.archive);
}

/** The pod sandbox (pause) image of a node images manifest; fails when it lists none. */
export function sandboxImage(manifest: ImagesManifest, dir: string): ImageArchive {
  const sandbox = manifest.images.find((image) => image.reference.includes('/pause:'));
  if (sandbox === undefined) throw new Error(`${join(dir, 'images.json')} lists no pause image`);
  return sandbox;
}
