import { randomUUID } from 'node:crypto';
import { alreadyExists, conflict, invalid, notFound } from './kube-api-status.js';

/** A stored Kubernetes object: whatever the client sent, plus server-managed metadata. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    resourceVersion?: string;
    uid?: string;
    creationTimestamp?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    [key: string]: unknown;
  };
  [key: string]: unknown;
}

export interface WriteOptions {
  /** Check and return the result without storing it (`?dryRun=All`). */
  dryRun?: boolean;
}

/** One stored change: the object as stored, or as it was before deletion. */
export interface StoreChange {
  type: ResourceType;
  object: KubeObject;
  deleted: boolean;
}

export interface ResourceType {
  /** API group ("" for core). */
  group: string;
  version: string;
  /** Plural resource name, as in URLs. */
  resource: string;
  kind: string;
  namespaced: boolean;
  /**
   * False where the kind's strategy refuses an update without a resourceVersion
   * (`AllowUnconditionalUpdate`; Leases: pkg/registry/coordination/lease/strategy.go).
   */
  unconditionalUpdate?: boolean;
}

/**
 * In-memory object storage with the API server's rules that our code depends on: names are
 * unique per namespace, every write bumps a global resourceVersion, an update whose
 * resourceVersion is stale is a conflict, immutable ConfigMaps and Secrets refuse changes, dry
 * runs store nothing. Listeners see every change, as controllers watching the real server do.
 */
export class KubeObjectStore {
  private readonly objects = new Map<string, KubeObject>();
  private revision = 1;
  private readonly listeners: ((change: StoreChange) => void)[] = [];

  private key(type: ResourceType, namespace: string | undefined, name: string): string {
    return `${type.group}/${type.resource}/${namespace ?? ''}/${name}`;
  }

  get(type: ResourceType, namespace: string | undefined, name: string): KubeObject {
    const found = this.objects.get(this.key(type, namespace, name));
    if (found === undefined) throw notFound(qualifiedResource(type), name);
    return clone(found);
  }

  list(
    type: ResourceType,
    namespace: string | undefined,
    labelSelector?: string,
  ): { items: KubeObject[]; resourceVersion: string } {
    const prefix = `${type.group}/${type.resource}/${namespace ?? ''}`;
    const matches = selector(labelSelector);
    const items = [...this.objects.entries()]
      .filter(([key]) =>
        namespace === undefined ? key.startsWith(`${type.group}/${type.resource}/`) : key.startsWith(`${prefix}/`),
      )
      .map(([, obj]) => clone(obj))
      .filter((obj) => matches(obj.metadata.labels ?? {}))
      .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
    return { items, resourceVersion: String(this.revision) };
  }

  /**
   * Calls `visit` with each stored object of `type` in `namespace`, not copied: what an informer's
   * cache hands an in-process controller (client-go listers share their objects, which the
   * controller must not change). A storm's every token write makes the signer read all tokens;
   * copying each one on every read made that quadratic in copies.
   */
  visit(type: ResourceType, namespace: string, visit: (object: Readonly<KubeObject>) => void): void {
    const prefix = `${type.group}/${type.resource}/${namespace}/`;
    for (const [key, object] of this.objects) if (key.startsWith(prefix)) visit(object);
  }

  /** Stores a new object; with `dryRun` only checks and returns what would be stored. */
  create(
    type: ResourceType,
    namespace: string | undefined,
    object: KubeObject,
    options: WriteOptions = {},
  ): KubeObject {
    const name = object.metadata.name;
    const key = this.key(type, namespace, name);
    if (this.objects.has(key)) throw alreadyExists(qualifiedResource(type), name);
    const identity = { name, uid: randomUUID(), creationTimestamp: kubeTimestamp() };
    return this.store(key, type, namespace, object, identity, options);
  }

  /**
   * Replaces an object, refusing a stale resourceVersion. A missing object is 404, or created
   * when the kind allows create-on-update (`createIfMissing`, as for Leases).
   */
  replace(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    object: KubeObject,
    options: WriteOptions & { createIfMissing?: boolean } = {},
  ): KubeObject {
    const key = this.key(type, namespace, name);
    const current = this.objects.get(key);
    if (current === undefined) {
      if (options.createIfMissing !== true) throw notFound(qualifiedResource(type), name);
      if (object.metadata.resourceVersion !== undefined && object.metadata.resourceVersion !== '')
        throw conflict(qualifiedResource(type), name);
      return this.create(type, namespace, object, options);
    }
    const sent = object.metadata.resourceVersion;
    if ((sent === undefined || sent === '') && type.unconditionalUpdate === false) {
      // The generic registry's Update (staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go).
      throw invalid(
        qualifiedResource(type),
        name,
        'metadata.resourceVersion: Invalid value: 0x0: must be specified for an update',
      );
    }
    if (sent !== undefined && sent !== '' && sent !== current.metadata.resourceVersion)
      throw conflict(qualifiedResource(type), name);
    this.checkImmutable(type, current, object);
    const identity = {
      name,
      uid: current.metadata.uid ?? randomUUID(),
      creationTimestamp: current.metadata.creationTimestamp ?? kubeTimestamp(),
    };
    return this.store(key, type, namespace, object, identity, options);
  }

  /** Called after every stored change (what a watch would deliver to a controller). */
  onChange(listener: (change: StoreChange) => void): void {
    this.listeners.push(listener);
  }

  /** Stores what the client sent with the server-managed fields set, under a new resourceVersion. */
  private store(
    key: string,
    type: ResourceType,
    namespace: string | undefined,
    object: KubeObject,
    identity: { name: string; uid: string; creationTimestamp: string },
    options: WriteOptions,
  ): KubeObject {
    const dryRun = options.dryRun === true;
    const stored: KubeObject = {
      ...clone(object),
      apiVersion: apiVersion(type),
      kind: type.kind,
      metadata: {
        ...clone(object.metadata),
        ...identity,
        ...(type.namespaced && namespace !== undefined ? { namespace } : {}),
        // A dry run allocates no resourceVersion, as the real server's dry-run storage.
        resourceVersion: dryRun ? (object.metadata.resourceVersion ?? '') : String(++this.revision),
      },
    };
    if (dryRun) return clone(stored);
    this.objects.set(key, stored);
    this.notify({ type, object: stored, deleted: false });
    return clone(stored);
  }

  delete(type: ResourceType, namespace: string | undefined, name: string, options: WriteOptions = {}): KubeObject {
    const key = this.key(type, namespace, name);
    const current = this.objects.get(key);
    if (current === undefined) throw notFound(qualifiedResource(type), name);
    if (options.dryRun === true) return clone(current);
    this.objects.delete(key);
    this.revision++;
    this.notify({ type, object: current, deleted: true });
    return clone(current);
  }

  private notify(change: StoreChange): void {
    for (const listener of this.listeners) listener({ ...change, object: clone(change.object) });
  }

  private checkImmutable(type: ResourceType, current: KubeObject, next: KubeObject): void {
    // ValidateSecretUpdate (pkg/apis/core/validation/validation.go): the type never changes; an
    // update without one is defaulted to Opaque first.
    if (type.resource === 'secrets') {
      const was = typeof current['type'] === 'string' ? current['type'] : 'Opaque';
      const asked = typeof next['type'] === 'string' && next['type'] !== '' ? next['type'] : 'Opaque';
      if (asked !== was)
        throw invalid(
          type.kind,
          current.metadata.name,
          `type: Invalid value: ${JSON.stringify(asked)}: field is immutable`,
        );
    }
    if ((type.resource === 'configmaps' || type.resource === 'secrets') && current['immutable'] === true) {
      const same =
        JSON.stringify([current['data'], current['binaryData'], current['immutable']]) ===
        JSON.stringify([next['data'], next['binaryData'], next['immutable']]);
      if (!same)
        throw invalid(qualifiedResource(type), current.metadata.name, 'field is immutable when `immutable` is set');
    }
  }
}

/** The resource as kube-apiserver names it in messages: `leases.coordination.k8s.io`, `secrets`. */
export function qualifiedResource(type: ResourceType): string {
  return type.group === '' ? type.resource : `${type.resource}.${type.group}`;
}

function apiVersion(type: ResourceType): string {
  return type.group === '' ? type.version : `${type.group}/${type.version}`;
}

/** RFC 3339 with whole seconds, as the API server writes creationTimestamp. */
function kubeTimestamp(): string {
  return new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function clone<T>(value: T): T {
  return structuredClone(value);
}

/** Equality-based label selectors: "a=b,c!=d,e" (presence). */
function selector(text: string | undefined): (labels: Record<string, string>) => boolean {
  if (text === undefined || text === '') return () => true;
  const terms = text.split(',').map((term) => term.trim());
  return (labels) =>
    terms.every((term) => {
      const ne = term.split('!=');
      if (ne.length === 2) return labels[ne[0] ?? ''] !== ne[1];
      const eq = term.split(/==?/);
      if (eq.length === 2) return labels[eq[0] ?? ''] === eq[1];
      return term in labels;
    });
}
