import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startImageRegistry } from './image-registry.js';
import { parseReference } from './image-store.js';
import type { ImageRegistry } from './image-registry.js';
import { registryMirrorHosts } from './containerd-config.js';

const MANIFEST_TYPE = 'application/vnd.oci.image.manifest.v1+json';
const sha256 = (data: string | Buffer): string => `sha256:${createHash('sha256').update(data).digest('hex')}`;

/** An OCI archive as buildah writes one: oci-layout, index.json naming the manifest, blobs. */
async function ociArchive(
  dir: string,
  name: string,
  layerText: string,
): Promise<{ archive: string; manifest: string; layer: Buffer }> {
  const layout = join(dir, `${name}-layout`);
  const blobs = join(layout, 'blobs', 'sha256');
  await mkdir(blobs, { recursive: true });
  const layer = Buffer.from(layerText);
  const config = JSON.stringify({
    architecture: 'amd64',
    os: 'linux',
    rootfs: { type: 'layers', diff_ids: [sha256(layer)] },
  });
  const manifest = JSON.stringify({
    schemaVersion: 2,
    mediaType: MANIFEST_TYPE,
    config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: sha256(config), size: config.length },
    layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar', digest: sha256(layer), size: layer.length }],
  });
  for (const blob of [layer, config, manifest]) await writeFile(join(blobs, sha256(blob).slice(7)), blob);
  await writeFile(join(layout, 'oci-layout'), '{"imageLayoutVersion":"1.0.0"}');
  await writeFile(
    join(layout, 'index.json'),
    JSON.stringify({
      schemaVersion: 2,
      manifests: [{ mediaType: MANIFEST_TYPE, digest: sha256(manifest), size: manifest.length }],
    }),
  );
  const archive = join(dir, `${name}.oci.tar`);
  execFileSync('tar', ['-cf', archive, '-C', layout, 'oci-layout', 'index.json', 'blobs']);
  return { archive, manifest, layer };
}

describe('the read-only image registry that mini’s nodes pull the suite’s images from', () => {
  let dir: string;
  let registry: ImageRegistry;
  let kitten: Awaited<ReturnType<typeof ociArchive>>;
  let busybox: Awaited<ReturnType<typeof ociArchive>>;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'registry-test-'));
    kitten = await ociArchive(dir, 'kitten', 'the kitten layer');
    busybox = await ociArchive(dir, 'busybox', 'the busybox layer');
    registry = await startImageRegistry({
      host: '127.0.0.1',
      images: [
        { reference: 'registry.k8s.io/e2e-test-images/kitten:1.8', archive: kitten.archive },
        { reference: 'registry.k8s.io/e2e-test-images/busybox:1.37.0-2', archive: busybox.archive },
      ],
    });
  });

  afterAll(async () => {
    await registry.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('answers the API check and names the registries it mirrors', async () => {
    const res = await fetch(`${registry.url}/v2/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('docker-distribution-api-version')).toBe('registry/2.0');
    expect(registry.upstreams).toEqual(['registry.k8s.io']);
  });

  it('serves a manifest by tag and by digest, with its media type and digest, as containerd asks (ns=…)', async () => {
    const byTag = await fetch(`${registry.url}/v2/e2e-test-images/kitten/manifests/1.8?ns=registry.k8s.io`);
    expect(byTag.status).toBe(200);
    expect(byTag.headers.get('content-type')).toBe(MANIFEST_TYPE);
    expect(byTag.headers.get('docker-content-digest')).toBe(sha256(kitten.manifest));
    expect(await byTag.text()).toBe(kitten.manifest);
    const byDigest = await fetch(`${registry.url}/v2/e2e-test-images/kitten/manifests/${sha256(kitten.manifest)}`);
    expect(await byDigest.text()).toBe(kitten.manifest);
    const head = await fetch(`${registry.url}/v2/e2e-test-images/busybox/manifests/1.37.0-2`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(busybox.manifest.length));
    expect(head.headers.get('docker-content-digest')).toBe(sha256(busybox.manifest));
  });

  it('serves the layers of every archive from one store', async () => {
    for (const image of [kitten, busybox]) {
      const res = await fetch(`${registry.url}/v2/e2e-test-images/any/blobs/${sha256(image.layer)}`);
      expect(res.status).toBe(200);
      expect(Buffer.from(await res.arrayBuffer()).equals(image.layer)).toBe(true);
    }
  });

  it('refuses what it does not hold, naming it: another registry’s image, an unknown tag or blob', async () => {
    const other = await fetch(`${registry.url}/v2/e2e-test-images/kitten/manifests/1.8?ns=docker.io`);
    expect(other.status).toBe(404);
    expect(await other.text()).toContain('no manifest docker.io/e2e-test-images/kitten:1.8 here');
    const tag = await fetch(`${registry.url}/v2/e2e-test-images/kitten/manifests/9.9`);
    expect(await tag.json()).toEqual({
      errors: [{ code: 'MANIFEST_UNKNOWN', message: 'no manifest registry.k8s.io/e2e-test-images/kitten:9.9 here' }],
    });
    const blob = await fetch(`${registry.url}/v2/x/blobs/sha256:${'0'.repeat(64)}`);
    expect(blob.status).toBe(404);
    expect(await blob.text()).toContain('BLOB_UNKNOWN');
  });

  it('attack: a blob path that is not a digest reads no file outside the store', async () => {
    for (const path of [
      '..%2F..%2F..%2Fetc%2Fpasswd',
      'sha256:..%2F..%2Findex.json',
      'sha256:ABC',
      `md5:${'0'.repeat(32)}`,
    ]) {
      const res = await fetch(`${registry.url}/v2/x/blobs/${path}`);
      expect(res.status, path).toBe(400);
      expect(await res.text()).toContain('is not a sha256 digest');
    }
  });

  it('attack: it is read-only: a push is refused as such', async () => {
    for (const method of ['PUT', 'POST', 'PATCH', 'DELETE']) {
      const res = await fetch(
        `${registry.url}/v2/e2e-test-images/kitten/manifests/1.8`,
        method === 'DELETE' ? { method } : { method, body: '{}' },
      );
      expect(res.status, method).toBe(405);
      expect(res.headers.get('allow')).toBe('GET, HEAD');
      expect(await res.text()).toContain('this registry is read-only');
    }
  });

  it('refuses to start on an archive without an image, naming the archive', async () => {
    const empty = join(dir, 'empty');
    await mkdir(join(empty, 'blobs'), { recursive: true });
    await writeFile(join(empty, 'index.json'), '{"schemaVersion":2,"manifests":[]}');
    const archive = join(dir, 'empty.oci.tar');
    execFileSync('tar', ['-cf', archive, '-C', empty, 'index.json', 'blobs']);
    await expect(
      startImageRegistry({ host: '127.0.0.1', images: [{ reference: 'registry.k8s.io/x:1', archive }] }),
    ).rejects.toThrow(`${archive} holds no image manifest`);
    await expect(startImageRegistry({ host: '127.0.0.1', images: [{ reference: 'kitten', archive }] })).rejects.toThrow(
      'image reference "kitten" is not host/repository:tag',
    );
  });

  it('reads references as host, repository and tag', () => {
    expect(parseReference('registry.k8s.io/e2e-test-images/agnhost:2.66.1')).toEqual({
      host: 'registry.k8s.io',
      repository: 'e2e-test-images/agnhost',
      tag: '2.66.1',
    });
  });

  it('gives containerd a hosts.toml that tries the mirror first, then the registry itself', () => {
    expect(registryMirrorHosts('registry.k8s.io', 'http://10.42.7.1:41234')).toBe(
      "server = 'https://registry.k8s.io'\n\n[host.'http://10.42.7.1:41234']\n  capabilities = ['pull', 'resolve']\n",
    );
  });
});
