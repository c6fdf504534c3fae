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

export interface ResourceType {
  /** API group ("" for core). */
  group: string;
  version: string;
  /** Plural resource name, as in URLs. */
  resource: string;
  kind: string;
  namespaced: boolean;
}

/**
 * In-memory object storage with the API server's rules that our code depends on: names are
 * unique per namespace, every write bumps a global resourceVersion, an update whose
 * resourceVersion is stale is a conflict, immutable ConfigMaps and Secrets refuse changes.
 */
export class KubeObjectStore {
  private readonly objects = new Map<string, KubeObject>();
  private revision = 1;

  private key(type: ResourceType, namespace: string | undefined, name: string): string {
    return `${type.group}/${type.resource}/${namespace ?? ''}/${name}`;
  }

  get(type: ResourceType, namespace: string | undefined, name: string): KubeObject {
    const found = this.objects.get(this.key(type, namespace, name));
    if (found === undefined) throw notFound(qualified(type), name);
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

  create(type: ResourceType, namespace: string | undefined, object: KubeObject): KubeObject {
    const name = object.metadata.name;
    const key = this.key(type, namespace, name);
    if (this.objects.has(key)) throw alreadyExists(qualified(type), name);
    return this.store(key, type, namespace, object, { name, uid: randomUUID(), creationTimestamp: kubeTimestamp() });
  }

  replace(type: ResourceType, namespace: string | undefined, name: string, object: KubeObject): KubeObject {
    const key = this.key(type, namespace, name);
    const current = this.objects.get(key);
    if (current === undefined) throw notFound(qualified(type), name);
    const sent = object.metadata.resourceVersion;
    if (sent !== undefined && sent !== current.metadata.resourceVersion) throw conflict(qualified(type), name);
    this.checkImmutable(type, current, object);
    return this.store(key, type, namespace, object, {
      name,
      uid: current.metadata.uid ?? randomUUID(),
      creationTimestamp: current.metadata.creationTimestamp ?? kubeTimestamp(),
    });
  }

  /** Stores what the client sent with the server-managed fields set, under a new resourceVersion. */
  private store(
    key: string,
    type: ResourceType,
    namespace: string | undefined,
    object: KubeObject,
    identity: { name: string; uid: string; creationTimestamp: string },
  ): KubeObject {
    const stored: KubeObject = {
      ...clone(object),
      apiVersion: apiVersion(type),
      kind: type.kind,
      metadata: {
        ...clone(object.metadata),
        ...identity,
        ...(type.namespaced && namespace !== undefined ? { namespace } : {}),
        resourceVersion: String(++this.revision),
      },
    };
    this.objects.set(key, stored);
    return clone(stored);
  }

  /** JSON merge patch (RFC 7386); strategic and merge patches are treated the same for our objects. */
  patch(type: ResourceType, namespace: string | undefined, name: string, patch: unknown): KubeObject {
    const current = this.get(type, namespace, name);
    const merged = mergePatch(current, patch) as KubeObject;
    const sent = (patch as { metadata?: { resourceVersion?: unknown } } | null)?.metadata?.resourceVersion;
    if (typeof sent === 'string' && sent !== current.metadata.resourceVersion) throw conflict(qualified(type), name);
    if (current.metadata.resourceVersion !== undefined)
      merged.metadata.resourceVersion = current.metadata.resourceVersion;
    return this.replace(type, namespace, name, merged);
  }

  delete(type: ResourceType, namespace: string | undefined, name: string): KubeObject {
    const key = this.key(type, namespace, name);
    const current = this.objects.get(key);
    if (current === undefined) throw notFound(qualified(type), name);
    this.objects.delete(key);
    this.revision++;
    return clone(current);
  }

  private checkImmutable(type: ResourceType, current: KubeObject, next: KubeObject): void {
    if ((type.resource === 'configmaps' || type.resource === 'secrets') && current['immutable'] === true) {
      const same =
        JSON.stringify([current['data'], current['binaryData'], current['immutable']]) ===
        JSON.stringify([next['data'], next['binaryData'], next['immutable']]);
      if (!same) throw invalid(qualified(type), current.metadata.name, 'field is immutable when `immutable` is set');
    }
  }
}

function qualified(type: ResourceType): string {
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

function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const base: Record<string, unknown> =
    target !== null && typeof target === 'object' && !Array.isArray(target)
      ? { ...(target as Record<string, unknown>) }
      : {};
  const changes = Object.entries(patch as Record<string, unknown>);
  const removed = new Set(changes.filter(([, value]) => value === null).map(([key]) => key));
  const kept = Object.entries(base).filter(([key]) => !removed.has(key));
  const updated = changes
    .filter(([, value]) => value !== null)
    .map(([key, value]) => [key, mergePatch(base[key], value)] as const);
  return Object.fromEntries([...kept, ...updated]);
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
