import { computeDetachedSignature } from '../bootstrap-jws.js';
import type { KubeObject, KubeObjectStore, ResourceType } from '../kube-object-store.js';

/*
 * kube-controller-manager's bootstrapsigner and tokencleaner controllers
 * (pkg/controller/bootstrap/bootstrapsigner.go, tokencleaner.go), which kubeadm enables: the
 * kube-public/cluster-info ConfigMap carries one `jws-kubeconfig-<token id>` key per valid token
 * marked usage-bootstrap-signing=true, signing its `kubeconfig`; signatures of other tokens are
 * removed; expired token Secrets are deleted. Runs after each change to token Secrets or to
 * cluster-info (as the real controllers do from their watches), and on a timer for expiries.
 */

const CLUSTER_INFO = { namespace: 'kube-public', name: 'cluster-info' } as const;
const JWS_PREFIX = 'jws-kubeconfig-';
const TOKEN_SECRET_TYPE = 'bootstrap.kubernetes.io/token';

export interface BootstrapSignerTypes {
  secrets: ResourceType;
  configMaps: ResourceType;
}

interface SigningToken {
  id: string;
  secret: string;
}

export class BootstrapSigner {
  private scheduled = false;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly store: KubeObjectStore,
    private readonly types: BootstrapSignerTypes,
    resyncMs = 1_000,
  ) {
    store.onChange((change) => {
      if (this.concerns(change.object, change.type)) this.schedule();
    });
    this.timer = setInterval(() => {
      this.schedule();
    }, resyncMs);
    this.timer.unref();
    this.schedule();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private concerns(object: KubeObject, type: ResourceType): boolean {
    if (type.group === '' && type.resource === 'secrets') return object['type'] === TOKEN_SECRET_TYPE;
    return (
      type.group === '' &&
      type.resource === 'configmaps' &&
      object.metadata.namespace === CLUSTER_INFO.namespace &&
      object.metadata.name === CLUSTER_INFO.name
    );
  }

  /** Reconciles soon, once for any number of changes (a work queue of one key). */
  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.reconcile();
    });
  }

  private reconcile(now = Date.now()): void {
    const tokens = this.cleanTokens(now);
    let clusterInfo: KubeObject;
    try {
      clusterInfo = this.store.get(this.types.configMaps, CLUSTER_INFO.namespace, CLUSTER_INFO.name);
    } catch {
      return; // no cluster-info yet: nothing to sign
    }
    const data = { ...((clusterInfo['data'] as Record<string, string> | undefined) ?? {}) };
    const content = data['kubeconfig'];
    if (content === undefined) return;
    const wanted = Object.fromEntries(
      tokens.map((t) => [`${JWS_PREFIX}${t.id}`, computeDetachedSignature(content, t.id, t.secret)]),
    );
    const unsigned = Object.fromEntries(Object.entries(data).filter(([key]) => !key.startsWith(JWS_PREFIX)));
    const next = { ...unsigned, ...wanted };
    if (JSON.stringify(Object.entries(next).sort()) === JSON.stringify(Object.entries(data).sort())) return;
    try {
      this.store.replace(this.types.configMaps, CLUSTER_INFO.namespace, CLUSTER_INFO.name, {
        ...clusterInfo,
        data: next,
      });
    } catch {
      this.schedule(); // a concurrent write: try again with the new version
    }
  }

  /** Deletes expired token Secrets (tokencleaner) and returns the valid signing tokens. */
  private cleanTokens(now: number): SigningToken[] {
    const signing: SigningToken[] = [];
    for (const secret of this.store.list(this.types.secrets, 'kube-system').items) {
      if (secret['type'] !== TOKEN_SECRET_TYPE) continue;
      const data = (secret['data'] as Record<string, string> | undefined) ?? {};
      const field = (key: string): string => Buffer.from(data[key] ?? '', 'base64').toString();
      const expiration = field('expiration');
      // cluster-bootstrap/util/secrets HasExpired: an unparseable expiration counts as expired.
      if (expiration !== '' && !(Date.parse(expiration) >= now)) {
        this.store.delete(this.types.secrets, 'kube-system', secret.metadata.name);
        continue;
      }
      const id = field('token-id');
      const tokenSecret = field('token-secret');
      // bootstrapsigner getTokens: the name must be bootstrap-token-<token-id>, both parts valid.
      if (secret.metadata.name !== `bootstrap-token-${id}` || !/^[a-z0-9]{6}$/.test(id)) continue;
      if (!/^[a-z0-9]{16}$/.test(tokenSecret) || field('usage-bootstrap-signing') !== 'true') continue;
      signing.push({ id, secret: tokenSecret });
    }
    return signing;
  }
}
