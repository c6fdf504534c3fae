import { computeDetachedSignature } from '../bootstrap-jws.js';
import type { KubeObject, KubeObjectStore, ResourceType } from '../kube-object-store.js';
import { bootstrapTokenExpired } from '../kube-api/bootstrap-token-expiration.js';

/*
 * kube-controller-manager's bootstrapsigner and tokencleaner controllers
 * (pkg/controller/bootstrap/bootstrapsigner.go, tokencleaner.go), which kubeadm enables: the
 * kube-public/cluster-info ConfigMap carries one `jws-kubeconfig-<token id>` key per valid token
 * marked usage-bootstrap-signing=true, signing its `kubeconfig`; signatures of other tokens are
 * removed; expired token Secrets are deleted. As the real controllers do from their watches, the
 * cleaner looks at each token Secret that changed (tokencleaner queues the Secret's key), the
 * signer re-signs after each change to token Secrets or to cluster-info, and a timer catches
 * expiries (tokencleaner re-queues a Secret for its expiry time).
 */

const CLUSTER_INFO = { namespace: 'kube-public', name: 'cluster-info' } as const;
const JWS_PREFIX = 'jws-kubeconfig-';
const TOKEN_SECRET_TYPE = 'bootstrap.kubernetes.io/token';
const TOKEN_NAMESPACE = 'kube-system';

export interface BootstrapSignerTypes {
  secrets: ResourceType;
  configMaps: ResourceType;
}

interface SigningToken {
  id: string;
  secret: string;
}

/** What the controllers need of a token Secret, by the resourceVersion it was decoded from. */
interface DecodedToken {
  resourceVersion: string;
  expiration: string;
  signing?: SigningToken;
}

export class BootstrapSigner {
  private scheduled = false;
  /** Every reconcile scans all token Secrets: the timer's, and the first. */
  private fullScan = true;
  /** Token Secrets changed since the last reconcile, for the cleaner. */
  private readonly changed = new Set<string>();
  private readonly decoded = new Map<string, DecodedToken>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly store: KubeObjectStore,
    private readonly types: BootstrapSignerTypes,
    resyncMs = 1_000,
  ) {
    store.onChange((change) => {
      if (this.isTokenSecret(change.object, change.type)) {
        if (!change.deleted) this.changed.add(change.object.metadata.name);
        this.schedule();
      } else if (this.isClusterInfo(change.object, change.type)) this.schedule();
    });
    this.timer = setInterval(() => {
      this.fullScan = true;
      this.schedule();
    }, resyncMs);
    this.timer.unref();
    this.schedule();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private isTokenSecret(object: KubeObject, type: ResourceType): boolean {
    return (
      type.group === '' &&
      type.resource === 'secrets' &&
      object.metadata.namespace === TOKEN_NAMESPACE &&
      object['type'] === TOKEN_SECRET_TYPE
    );
  }

  private isClusterInfo(object: KubeObject, type: ResourceType): boolean {
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
    let clusterInfo: KubeObject | undefined;
    try {
      clusterInfo = this.store.get(this.types.configMaps, CLUSTER_INFO.namespace, CLUSTER_INFO.name);
    } catch {
      clusterInfo = undefined; // no cluster-info yet: nothing to sign
    }
    const content = (clusterInfo?.['data'] as Record<string, string> | undefined)?.['kubeconfig'];
    // Only signing, or the timer, needs every token; otherwise the changed ones are enough.
    let tokens: SigningToken[] = [];
    if (this.fullScan || content !== undefined) tokens = this.cleanAllTokens(now);
    else this.cleanChangedTokens(now);
    this.fullScan = false;
    this.changed.clear();
    if (clusterInfo === undefined || content === undefined) return;
    const data = { ...((clusterInfo['data'] as Record<string, string> | undefined) ?? {}) };
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
  private cleanAllTokens(now: number): SigningToken[] {
    const signing: SigningToken[] = [];
    const expired: string[] = [];
    const seen = new Set<string>();
    this.store.visit(this.types.secrets, TOKEN_NAMESPACE, (secret) => {
      if (secret['type'] !== TOKEN_SECRET_TYPE) return;
      const { name } = secret.metadata;
      seen.add(name);
      const token = this.tokenOf(secret);
      if (bootstrapTokenExpired(token.expiration, now)) expired.push(name);
      else if (token.signing !== undefined) signing.push(token.signing);
    });
    for (const name of this.decoded.keys()) if (!seen.has(name)) this.decoded.delete(name);
    for (const name of expired) this.store.delete(this.types.secrets, TOKEN_NAMESPACE, name);
    return signing;
  }

  /** tokencleaner's per-key work: each changed token Secret, deleted if it has expired. */
  private cleanChangedTokens(now: number): void {
    for (const name of this.changed) {
      let secret: KubeObject;
      try {
        secret = this.store.get(this.types.secrets, TOKEN_NAMESPACE, name);
      } catch {
        this.decoded.delete(name);
        continue; // deleted meanwhile
      }
      if (secret['type'] !== TOKEN_SECRET_TYPE) continue;
      if (bootstrapTokenExpired(this.tokenOf(secret).expiration, now)) {
        this.store.delete(this.types.secrets, TOKEN_NAMESPACE, name);
        this.decoded.delete(name);
      }
    }
  }

  /** A token Secret's fields, decoded once per resourceVersion. */
  private tokenOf(secret: Readonly<KubeObject>): DecodedToken {
    const { name, resourceVersion = '' } = secret.metadata;
    const known = this.decoded.get(name);
    if (known !== undefined && known.resourceVersion === resourceVersion) return known;
    const data = (secret['data'] as Record<string, string> | undefined) ?? {};
    const field = (key: string): string => Buffer.from(data[key] ?? '', 'base64').toString();
    const id = field('token-id');
    const tokenSecret = field('token-secret');
    // bootstrapsigner getTokens: the name must be bootstrap-token-<token-id>, both parts valid.
    const signs =
      name === `bootstrap-token-${id}` &&
      /^[a-z0-9]{6}$/.test(id) &&
      /^[a-z0-9]{16}$/.test(tokenSecret) &&
      field('usage-bootstrap-signing') === 'true';
    const token: DecodedToken = {
      resourceVersion,
      expiration: field('expiration'),
      ...(signs ? { signing: { id, secret: tokenSecret } } : {}),
    };
    this.decoded.set(name, token);
    return token;
  }
}
