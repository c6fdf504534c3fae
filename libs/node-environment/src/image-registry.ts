import { createReadStream } from 'node:fs';
import { createServer } from 'node:http';
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SHA256_DIGEST, openImageStore } from './image-store.js';
import type { ImageStore, RegistryImage } from './image-store.js';

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

const MANIFEST_PATH = /^\/v2\/(.+)\/manifests\/([^/]+)$/;
const BLOB_PATH = /^\/v2\/(.+)\/blobs\/([^/]+)$/;

/**
 * A read-only registry (the OCI distribution API's pull side: `/v2/`, manifests by tag or digest,
 * blobs) serving images from their OCI archives, so that mini's nodes can pull what no outside
 * registry gives them: a spec whose pull policy is Always pulls the image the node already holds.
 * Each archive's blobs are unpacked once into one store (equal digests are equal content).
 */
export async function startImageRegistry(options: ImageRegistryOptions): Promise<ImageRegistry> {
  const store = await openImageStore(options.images);
  const handle = distributionApi(store);
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
    upstreams: store.upstreams,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
      });
      await store.remove();
    },
  };
}

/** Sends blob `digest` (a manifest or a layer) as `mediaType`; its headers only for HEAD. */
async function sendBlob(
  store: ImageStore,
  req: IncomingMessage,
  res: ServerResponse,
  digest: string,
  mediaType: string,
): Promise<void> {
  const hex = SHA256_DIGEST.exec(digest)?.[1];
  if (hex === undefined) throw new RegistryError(400, 'DIGEST_INVALID', `${digest} is not a sha256 digest`);
  const blob = await store.blob(hex);
  if (blob === undefined) throw new RegistryError(404, 'BLOB_UNKNOWN', `no blob ${digest}`);
  res.writeHead(200, { 'content-type': mediaType, 'content-length': blob.size, 'docker-content-digest': digest });
  if (req.method === 'HEAD') {
    res.end();
    return;
  }
  createReadStream(blob.file)
    .on('error', () => {
      res.destroy();
    })
    .pipe(res);
}

/** The distribution API's pull side over `store`: `/v2/`, manifests by tag or digest, blobs. */
function distributionApi(store: ImageStore): (...args: Parameters<RequestListener>) => Promise<void> {
  return async (req, res) => {
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
    const upstream = url.searchParams.get('ns') ?? store.upstreams[0] ?? '';
    const manifestPath = MANIFEST_PATH.exec(url.pathname);
    if (manifestPath !== null) {
      const [, repository = '', reference = ''] = manifestPath;
      const manifest = store.manifest(upstream, repository, reference);
      if (manifest === undefined) {
        throw new RegistryError(404, 'MANIFEST_UNKNOWN', `no manifest ${upstream}/${repository}:${reference} here`);
      }
      await sendBlob(store, req, res, manifest.digest, manifest.mediaType);
      return;
    }
    const blobPath = BLOB_PATH.exec(url.pathname);
    if (blobPath === null) throw new RegistryError(404, 'NAME_UNKNOWN', `${url.pathname} is not a registry path`);
    await sendBlob(store, req, res, blobPath[2] ?? '', 'application/octet-stream');
  };
}
