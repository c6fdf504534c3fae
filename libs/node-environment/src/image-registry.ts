import { spawn } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** An image as an OCI archive (`oci-archive` tar: index.json, blobs/sha256/…) and the name it serves under. */
export interface RegistryImage {
  /** The full reference, registry host included: `registry.k8s.io/e2e-test-images/kitten:1.8`. */
  reference: string;
  archive: string;
}

export interface ImageRegistryOptions {
  /** The address to listen on (mini's host address on the nodes' bridge); the port is chosen free. */
  host: string;
  images: readonly RegistryImage[];
}

export interface ImageRegistry {
  /** `http://<host>:<port>`, for a containerd mirror entry. */
  url: string;
  /** The registry hosts whose images it serves (`registry.k8s.io`), each a mirror to configure. */
  upstreams: string[];
  close(): Promise<void>;
}

/** An OCI content descriptor: what a manifest is, where, and how long. */
export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
}

/** A refusal, sent as the distribution API's error body. */
class RegistryError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const DIGEST = /^sha256:([a-f0-9]{64})$/;
const MANIFEST_PATH = /^\/v2\/(.+)\/manifests\/([^/]+)$/;
const BLOB_PATH = /^\/v2\/(.+)\/blobs\/([^/]+)$/;

/** `registry.k8s.io/e2e-test-images/kitten:1.8` → host, repository and tag. */
export function parseReference(reference: string): { host: string; repository: string; tag: string } {
  const match = /^([^/]+)\/(.+):([\w][\w.-]{0,127})$/.exec(reference);
  if (match === null) throw new Error(`image reference ${JSON.stringify(reference)} is not host/repository:tag`);
  const [, host = '', repository = '', tag = ''] = match;
  return { host, repository, tag };
}

/** Runs tar with `args`; resolves to its output, rejects naming the archive and tar's complaint. */
function tar(archive: string, args: readonly string[]): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn('tar', [...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    const stdout: Buffer[] = [];
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolve(Buffer.concat(stdout));
      else reject(new Error(`reading ${archive} failed: ${stderr.trim() || `tar exited ${String(code)}`}`));
    });
  });
}

/** The image manifest an OCI archive holds: its index.json's only entry. */
export async function readArchiveManifest(archive: string): Promise<Descriptor> {
  const index = JSON.parse((await tar(archive, ['-xOf', archive, 'index.json'])).toString('utf8')) as {
    manifests?: Descriptor[];
  };
  const manifest = index.manifests?.[0];
  if (manifest === undefined || !DIGEST.test(manifest.digest)) {
    throw new Error(`${archive} holds no image manifest (index.json has no sha256 entry)`);
  }
  return manifest;
}

/**
 * A read-only registry (the OCI distribution API's pull side: `/v2/`, manifests by tag or digest,
 * blobs) serving images from their OCI archives, so that mini's nodes can pull what no outside
 * registry gives them: a spec whose pull policy is Always pulls the image the node already holds.
 * Each archive's blobs are unpacked once into one store (equal digests are equal content).
 */
export async function startImageRegistry(options: ImageRegistryOptions): Promise<ImageRegistry> {
  // The archives' blobs, unpacked into a directory of the registry's own, removed on close.
  const scratch = await mkdtemp(join(tmpdir(), 'image-registry-'));
  const blobs = join(scratch, 'blobs', 'sha256');
  /** `<host>/<repository>:<tag>` → the image's manifest. */
  const tags = new Map<string, Descriptor>();
  const manifests = new Map<string, Descriptor>();
  try {
    for (const image of options.images) {
      const { host, repository, tag } = parseReference(image.reference);
      const manifest = await readArchiveManifest(image.archive);
      await tar(image.archive, ['-xf', image.archive, '-C', scratch, 'blobs']);
      tags.set(`${host}/${repository}:${tag}`, manifest);
      manifests.set(manifest.digest, manifest);
    }
  } catch (error) {
    await rm(scratch, { recursive: true, force: true });
    throw error;
  }

  const upstreams = [...new Set(options.images.map((image) => parseReference(image.reference).host))];

  const blobFile = async (digest: string): Promise<{ file: string; size: number }> => {
    const hex = DIGEST.exec(digest)?.[1];
    if (hex === undefined) throw new RegistryError(400, 'DIGEST_INVALID', `${digest} is not a sha256 digest`);
    const file = join(blobs, hex);
    try {
      return { file, size: (await stat(file)).size };
    } catch {
      throw new RegistryError(404, 'BLOB_UNKNOWN', `no blob ${digest}`);
    }
  };

  const sendBlob = async (req: IncomingMessage, res: ServerResponse, digest: string, mediaType: string) => {
    const { file, size } = await blobFile(digest);
    res.writeHead(200, { 'content-type': mediaType, 'content-length': size, 'docker-content-digest': digest });
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    createReadStream(file)
      .on('error', () => {
        res.destroy();
      })
      .pipe(res);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET, HEAD');
      throw new RegistryError(405, 'UNSUPPORTED', 'this registry is read-only');
    }
    const url = new URL(req.url ?? '/', 'http://registry');
    res.setHeader('docker-distribution-api-version', 'registry/2.0');
    if (url.pathname === '/v2/' || url.pathname === '/v2') {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': 2 });
      res.end(req.method === 'HEAD' ? undefined : '{}');
      return;
    }
    // containerd names the registry it mirrors in `ns`; without it, the first the images name.
    const upstream = url.searchParams.get('ns') ?? upstreams[0] ?? '';
    const manifestPath = MANIFEST_PATH.exec(url.pathname);
    if (manifestPath !== null) {
      const [, repository = '', reference = ''] = manifestPath;
      const manifest = DIGEST.test(reference)
        ? manifests.get(reference)
        : tags.get(`${upstream}/${repository}:${reference}`);
      if (manifest === undefined) {
        throw new RegistryError(404, 'MANIFEST_UNKNOWN', `no manifest ${upstream}/${repository}:${reference} here`);
      }
      await sendBlob(req, res, manifest.digest, manifest.mediaType);
      return;
    }
    const blobPath = BLOB_PATH.exec(url.pathname);
    if (blobPath === null) throw new RegistryError(404, 'NAME_UNKNOWN', `${url.pathname} is not a registry path`);
    await sendBlob(req, res, blobPath[2] ?? '', 'application/octet-stream');
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!(error instanceof RegistryError) || res.headersSent) {
        res.destroy();
        return;
      }
      // The distribution API's error body: what was refused, and why.
      const body = JSON.stringify({ errors: [{ code: error.code, message: error.message }] });
      res.writeHead(error.status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
  });
  // Slow or idle clients do not hold the registry: a pull reads steadily.
  server.headersTimeout = 10_000;
  server.requestTimeout = 60_000;
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `http://${host}:${port}`,
    upstreams,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
      });
      await rm(scratch, { recursive: true, force: true });
    },
  };
}
