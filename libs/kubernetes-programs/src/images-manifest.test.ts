import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { readImagesManifest, sandboxImage } from './images-manifest.js';

const COMMAND = 'node tools/kubernetes/images.mjs';

async function imagesDir(contents?: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'constellation-images-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  if (contents !== undefined) await writeFile(join(dir, 'images.json'), contents);
  return dir;
}

describe('images.json', () => {
  it('reads the release, recipe and images, and finds the pod sandbox', async () => {
    const images = [
      { reference: 'registry.k8s.io/pause:3.10.2', archive: 'pause.oci.tar' },
      { reference: 'registry.k8s.io/etcd:3.7.0-0', archive: 'etcd.oci.tar' },
    ];
    const dir = await imagesDir(JSON.stringify({ release: 'v1.37.2', recipe: 'abc', images }));
    const manifest = await readImagesManifest(dir, COMMAND);
    expect(manifest).toEqual({ release: 'v1.37.2', recipe: 'abc', images });
    expect(sandboxImage(manifest, dir)).toEqual(images[0]);
    expect(() => sandboxImage({ ...manifest, images: images.slice(1) }, dir)).toThrow(
      `${join(dir, 'images.json')} lists no pause image`,
    );
  });

  it('says what to run, as a command that runs as printed, when there are none or they are not of its shape', async () => {
    const missing = await imagesDir();
    await expect(readImagesManifest(missing, COMMAND, '(`npm run mini` does it for you)')).rejects.toThrow(
      `no images in ${missing} (no images.json): run \`${COMMAND}\` (\`npm run mini\` does it for you)`,
    );
    const notJson = await imagesDir('{');
    await expect(readImagesManifest(notJson, COMMAND)).rejects.toThrow(`run \`${COMMAND} --rebuild\``);
    const wrongShape = await imagesDir(JSON.stringify({ release: 'v1.37.2', images: [{ reference: 'x' }] }));
    await expect(readImagesManifest(wrongShape, COMMAND)).rejects.toThrow(
      `does not list a release and its images ({reference, archive}): run \`${COMMAND} --rebuild\``,
    );
  });
});
