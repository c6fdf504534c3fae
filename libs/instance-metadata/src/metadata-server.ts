import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createServer } from 'node:http';
import { normalize, join } from 'node:path';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';

/** One machine as the infrastructure describes it. */
export interface InstanceInfo {
  name: string;
  role: 'control-plane' | 'worker';
  /** The machine's address in the cluster network. */
  ip: string;
  /**
   * Lower-case hex SHA-256 of the DER SubjectPublicKeyInfo of the machine's TPM endorsement key,
   * recorded when the machine was provisioned. The JoinService finds the instance by it.
   */
  ekPublicKeyHash?: string;
}

export interface MetadataDocument {
  instances: InstanceInfo[];
  /** Where clients reach the control plane (load balancer): API server and JoinService. */
  endpoint: { host: string; apiServerPort: number; joinServicePort: number; initPort: number };
  /** scrypt hash of the init secret (see @constellation/keys hashInitSecret). */
  initSecretHash: string;
}

/**
 * The instance metadata service `mini` runs, shaped like Constellation's QEMU metadata API:
 * GET /self, /peers, /endpoint, /initsecrethash. A machine is identified by its source address;
 * when several share one (loopback mode) by the `X-Constellation-Node` header. Like a cloud's
 * instance API it is also the instance registry: GET /instances?ek=<hash> returns the machine
 * whose TPM has that endorsement key, or 404.
 */
export class MetadataServer {
  private document: MetadataDocument;
  private readonly server: Server;
  private port = 0;
  private host = '127.0.0.1';
  private readonly artifactsDir: string | undefined;
  /** Registry lookups answered (GET /instances), to see what callers make the platform's API do. */
  instanceLookups = 0;

  private constructor(document: MetadataDocument, artifactsDir?: string) {
    this.document = document;
    this.artifactsDir = artifactsDir;
    this.server = createServer((req, res) => {
      this.handle(req, res);
    });
  }

  /**
   * Starts the service; with `artifactsDir` it also serves that directory's files under
   * `/artifacts/` (mini's artifact host for signed component manifests).
   */
  static async start(
    document: MetadataDocument,
    port = 0,
    host = '127.0.0.1',
    artifactsDir?: string,
  ): Promise<MetadataServer> {
    const server = new MetadataServer(document, artifactsDir);
    await new Promise<void>((resolve, reject) => {
      server.server.once('error', reject);
      server.server.listen(port, host, resolve);
    });
    const address = server.server.address();
    server.port = typeof address === 'object' && address !== null ? address.port : port;
    server.host = host;
    return server;
  }

  get url(): string {
    return `http://${this.host.includes(':') ? `[${this.host}]` : this.host}:${this.port}`;
  }

  update(change: (document: MetadataDocument) => MetadataDocument): void {
    this.document = change(this.document);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) =>
      this.server.close(() => {
        resolve();
      }),
    );
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (req.method !== 'GET') {
      send(res, 405, { error: 'only GET is supported' });
      return;
    }
    if (path.startsWith('/artifacts/') && this.artifactsDir !== undefined) {
      const relative = normalize(decodeURIComponent(path.slice('/artifacts/'.length)));
      if (relative.startsWith('..') || relative.startsWith('/')) {
        send(res, 400, { error: 'bad artifact path' });
        return;
      }
      // Streamed: components are programs of up to about 100 MB (mini serves the kubelet).
      const file = join(this.artifactsDir, relative);
      stat(file).then(
        (info) => {
          res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': info.size });
          createReadStream(file)
            .on('error', () => res.destroy())
            .pipe(res);
        },
        () => {
          send(res, 404, { error: `no artifact ${relative}` });
        },
      );
      return;
    }
    switch (path) {
      case '/self': {
        const header = req.headers['x-constellation-node'];
        const name = typeof header === 'string' ? header : undefined;
        const address = (req.socket.remoteAddress ?? '').replace(/^::ffff:/, '');
        const byAddress = this.document.instances.filter((i) => i.ip === address);
        const self =
          name !== undefined
            ? this.document.instances.find((i) => i.name === name)
            : byAddress.length === 1
              ? byAddress[0]
              : undefined;
        if (self === undefined) {
          send(res, 404, { error: `no instance for ${name ?? address}` });
          return;
        }
        send(res, 200, self);
        return;
      }
      case '/instances': {
        this.instanceLookups++;
        const ek = new URL(req.url ?? '/', 'http://localhost').searchParams.get('ek') ?? '';
        if (!/^[0-9a-f]{64}$/.test(ek)) {
          send(res, 400, {
            error: 'query parameter ek must be 64 lower-case hex digits (SHA-256 of the EK public key)',
          });
          return;
        }
        const instance = this.document.instances.find((i) => i.ekPublicKeyHash === ek);
        if (instance === undefined) send(res, 404, { error: `no instance has an endorsement key with hash ${ek}` });
        else send(res, 200, instance);
        return;
      }
      case '/peers': {
        send(res, 200, this.document.instances);
        return;
      }
      case '/endpoint': {
        send(res, 200, this.document.endpoint);
        return;
      }
      case '/initsecrethash': {
        send(res, 200, { initSecretHash: this.document.initSecretHash });
        return;
      }
      default: {
        send(res, 404, { error: `unknown path ${path}` });
        return;
      }
    }
  }
}

function send(res: ServerResponse, code: number, body: unknown): void {
  res.writeHead(code, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}
