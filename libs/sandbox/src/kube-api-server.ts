import { createServer as createHttpServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { AUTHORIZATION_BINDINGS, MASTERS_GROUP } from './kube-api/authorization-rules.js';
import { KubeApiError, badRequest } from './kube-api-status.js';
import { handleResourceRequest, parseResourceRoute } from './kube-api-resources.js';
import { AccessControl, secretReader } from './kube-api/access-control.js';
import type { KubeApiAuthentication } from './kube-api/access-control.js';
import { discoveryDocument } from './kube-api/discovery.js';
import { nonResourceAttributes, resourceAttributes } from './kube-api/request-attributes.js';
import type { UserInfo } from './kube-api/request-attributes.js';
import { TABLE_CONTENT_TYPE, asTable, wantsTable } from './kube-api/table.js';
import { KubeObjectStore } from './kube-object-store.js';
import { startControllers } from './controllers/controller-manager.js';
import type { CertificateAuthority } from '@constellation/keys';
import type { ResourceType } from './kube-object-store.js';

/** The resources the stand-in serves: exactly what this project reads and writes. */
const NAMESPACES: ResourceType = {
  group: '',
  version: 'v1',
  resource: 'namespaces',
  kind: 'Namespace',
  namespaced: false,
};

const CLUSTER_ROLE_BINDINGS: ResourceType = {
  group: 'rbac.authorization.k8s.io',
  version: 'v1',
  resource: 'clusterrolebindings',
  kind: 'ClusterRoleBinding',
  namespaced: false,
};

export const RESOURCE_TYPES: readonly ResourceType[] = [
  NAMESPACES,
  { group: '', version: 'v1', resource: 'nodes', kind: 'Node', namespaced: false },
  { group: '', version: 'v1', resource: 'secrets', kind: 'Secret', namespaced: true },
  { group: '', version: 'v1', resource: 'configmaps', kind: 'ConfigMap', namespaced: true },
  {
    group: 'coordination.k8s.io',
    version: 'v1',
    resource: 'leases',
    kind: 'Lease',
    namespaced: true,
    unconditionalUpdate: false,
  },
  {
    group: 'certificates.k8s.io',
    version: 'v1',
    resource: 'certificatesigningrequests',
    kind: 'CertificateSigningRequest',
    namespaced: false,
  },
  CLUSTER_ROLE_BINDINGS,
];

export interface KubeApiServerOptions {
  /** Serve HTTPS with this certificate (PEM); plain HTTP otherwise. */
  tls?: { cert: string; key: string };
  /** What /version reports. */
  gitVersion?: string;
  /**
   * Authenticate and authorise like kube-apiserver (kube-api/access-control.ts). Undefined: an
   * open server that serves everyone, as the stand-in did before.
   */
  authentication?: KubeApiAuthentication;
  /**
   * The cluster CA for kube-controller-manager's kubelet client CSR approval and signing
   * (controllers/). The bootstrap signer and token cleaner always run.
   */
  clusterCa?: CertificateAuthority;
}

export interface RecordedRequest {
  method: string;
  path: string;
}

const MAX_BODY_BYTES = 3 * 1024 * 1024;

/**
 * A small Kubernetes API server on loopback: core/v1 namespaces, nodes, secrets and configmaps,
 * coordination.k8s.io/v1 leases, /version and the health endpoints. Real status codes, Status
 * bodies, resourceVersions and conflicts; nothing else. Used by tests and by `mini`, where no
 * real kube-apiserver can run.
 */
export class KubeApiServer {
  readonly store = new KubeObjectStore();
  readonly requests: RecordedRequest[] = [];
  private ready = true;
  private readonly server: Server;
  private readonly gitVersion: string;
  private port = 0;
  private readonly scheme: 'http' | 'https';
  private readonly access: AccessControl | undefined;
  private readonly controllers: { stop: () => void };
  private throttled: ((request: RecordedRequest) => boolean) | undefined;

  private constructor(options: KubeApiServerOptions) {
    this.gitVersion = options.gitVersion ?? 'v1.32.9';
    this.scheme = options.tls === undefined ? 'http' : 'https';
    const secrets = RESOURCE_TYPES.find((t) => t.resource === 'secrets') ?? NAMESPACES;
    const bindingExists = (name: string): boolean => {
      try {
        this.store.get(CLUSTER_ROLE_BINDINGS, undefined, name);
        return true;
      } catch {
        return false;
      }
    };
    this.access =
      options.authentication === undefined
        ? undefined
        : new AccessControl(
            options.authentication,
            secretReader((namespace, name) => this.store.get(secrets, namespace, name)),
            bindingExists,
          );
    const handler = (req: IncomingMessage, res: ServerResponse): void => {
      this.handle(req, res).catch((err: unknown) => {
        respond(res, 500, {
          kind: 'Status',
          status: 'Failure',
          message: String(err),
          reason: 'InternalError',
          code: 500,
        });
      });
    };
    this.server =
      options.tls === undefined
        ? createHttpServer(handler)
        : createHttpsServer({ cert: options.tls.cert, key: options.tls.key, ...this.access?.tlsOptions() }, handler);
    // kube-apiserver's http.Server (staging/src/k8s.io/apiserver/pkg/server/secure_serving.go):
    // IdleTimeout 90 s, ReadHeaderTimeout 32 s. Node's 5 s default closed kept-alive connections
    // that clients were about to reuse (a join refused with ECONNRESET in a test).
    this.server.keepAliveTimeout = 90_000;
    this.server.headersTimeout = 32_000;
    for (const name of ['default', 'kube-system', 'kube-public', 'kube-node-lease']) {
      this.store.create(NAMESPACES, undefined, { metadata: { name } });
    }
    // The ClusterRoleBindings whose rules the stand-in applies only while they exist, as kubeadm
    // creates them; a cluster admin may delete them (Constellation does: see bootstrapper init).
    for (const binding of AUTHORIZATION_BINDINGS) {
      if (binding.clusterRoleBinding === undefined) continue;
      this.store.create(CLUSTER_ROLE_BINDINGS, undefined, {
        metadata: { name: binding.clusterRoleBinding.name },
        roleRef: {
          apiGroup: 'rbac.authorization.k8s.io',
          kind: 'ClusterRole',
          name: binding.clusterRoleBinding.clusterRole,
        },
        subjects: binding.subjects.map((subject) => ({ ...subject, apiGroup: 'rbac.authorization.k8s.io' })),
      });
    }
    this.controllers = startControllers(this.store, RESOURCE_TYPES, options.clusterCa, bindingExists);
  }

  /** Starts the server on `host:port` (port 0 for any free port). */
  static async start(options: KubeApiServerOptions = {}, port = 0, host = '127.0.0.1'): Promise<KubeApiServer> {
    const api = new KubeApiServer(options);
    await new Promise<void>((resolve, reject) => {
      api.server.once('error', reject);
      api.server.listen(port, host, () => {
        resolve();
      });
    });
    const address = api.server.address();
    api.port = typeof address === 'object' && address !== null ? address.port : port;
    return api;
  }

  get url(): string {
    return `${this.scheme}://127.0.0.1:${this.port}`;
  }

  /** Makes /readyz fail (and every API call answer 503), as an API server that is still starting. */
  setReady(ready: boolean): void {
    this.ready = ready;
  }

  /**
   * Answers the requests `which` picks as kube-apiserver answers one beyond its in-flight limit
   * (staging/src/k8s.io/apiserver/pkg/server/filters/maxinflight.go, tooManyRequests): 429 with
   * `Retry-After: 1` and a plain-text body, after authentication, never to system:masters. Plays
   * an API server that sheds some requests and serves others; `undefined` ends it.
   */
  throttle(which: ((request: RecordedRequest) => boolean) | undefined): void {
    this.throttled = which;
  }

  async close(): Promise<void> {
    this.controllers.stop();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) =>
      this.server.close(() => {
        resolve();
      }),
    );
  }

  /** /version, in kube-apiserver's version.Info shape. */
  private versionInfo(): Record<string, string> {
    const [, major = '1', minor = '0'] = /^v(\d+)\.(\d+)/.exec(this.gitVersion) ?? [];
    return {
      major,
      minor,
      gitVersion: this.gitVersion,
      gitCommit: '',
      gitTreeState: 'clean',
      buildDate: '',
      goVersion: '',
      compiler: 'gc',
      platform: 'linux/amd64',
    };
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const method = req.method ?? 'GET';
    const recorded = { method, path: url.pathname };
    this.requests.push(recorded);
    if (url.pathname === '/readyz' || url.pathname === '/healthz' || url.pathname === '/livez') {
      res.writeHead(this.ready ? 200 : 500, { 'content-type': 'text/plain' }).end(this.ready ? 'ok' : 'not ready');
      return;
    }
    if (!this.ready) {
      respond(res, 503, new KubeApiError(503, 'ServiceUnavailable', 'the API server is starting').status);
      return;
    }
    let user: UserInfo | undefined;
    try {
      user = await this.access?.authenticate(req);
      if (this.throttled?.(recorded) === true && user?.groups.includes(MASTERS_GROUP) !== true) {
        tooManyRequests(res);
        return;
      }
      const discovery =
        method === 'GET' ? discoveryDocument(url.pathname, RESOURCE_TYPES, `127.0.0.1:${this.port}`) : undefined;
      if (discovery !== undefined || (url.pathname === '/version' && method === 'GET')) {
        if (user !== undefined) this.access?.authorize(nonResourceAttributes(user, method, url.pathname));
        respond(res, 200, discovery ?? this.versionInfo());
        return;
      }
      const route = parseResourceRoute(url.pathname, RESOURCE_TYPES);
      const body = method === 'POST' || method === 'PUT' || method === 'PATCH' ? await readJson(req) : undefined;
      if (user !== undefined) this.access?.authorize(resourceAttributes(user, method, route, body, url.searchParams));
      const contentType = req.headers['content-type'];
      const result = handleResourceRequest(this.store, NAMESPACES, {
        method,
        route,
        body,
        query: url.searchParams,
        contentType,
        user,
      });
      if (method === 'GET' && result.code === 200 && wantsTable(req.headers.accept))
        respond(res, 200, asTable(route.type, result.body), TABLE_CONTENT_TYPE);
      else respond(res, result.code, result.body);
    } catch (err) {
      if (err instanceof KubeApiError) respond(res, err.status.code, err.status);
      else throw err;
    }
  }
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new KubeApiError(413, 'RequestEntityTooLarge', 'request body too large');
    chunks.push(chunk);
  }
  const type = req.headers['content-type'] ?? 'application/json';
  if (!type.includes('json'))
    throw new KubeApiError(415, 'UnsupportedMediaType', `content type ${type} is not supported`);
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw badRequest('request body is not valid JSON');
  }
}

/** maxinflight.go's tooManyRequests: Go's http.Error with status 429 and `Retry-After: 1`. */
function tooManyRequests(res: ServerResponse): void {
  res
    .writeHead(429, {
      'retry-after': '1',
      'content-type': 'text/plain; charset=utf-8',
      'x-content-type-options': 'nosniff',
    })
    .end('Too many requests, please try again later.\n');
}

function respond(res: ServerResponse, code: number, body: unknown, contentType = 'application/json'): void {
  res.writeHead(code, { 'content-type': contentType }).end(JSON.stringify(body));
}
