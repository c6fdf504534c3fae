import { KubeApiError, badRequest } from './kube-api-status.js';
import { applyPatch, patchFormat } from './kube-api-patch.js';
import type { PatchFormat } from './kube-api-patch.js';
import { decodeObject, validateObject } from './kube-api-validation.js';
import type { KubeObject, KubeObjectStore, ResourceType } from './kube-object-store.js';
import { admitNodeWrite } from './kube-api/node-restriction.js';

/*
 * The REST semantics of the resources the stand-in serves, after authentication: routing by
 * group, version and resource (404 for versions the server does not serve), create, read, list,
 * replace (create-on-update for the kinds whose strategy allows it), patch, delete, the status
 * subresource, and `?dryRun=All`. Every write is decoded and validated like kube-apiserver does.
 */

export interface ResourceRoute {
  type: ResourceType;
  namespace: string | undefined;
  name: string | undefined;
  /** "status" for the status subresource. */
  subresource: string | undefined;
}

export interface ResourceRequest {
  method: string;
  route: ResourceRoute;
  body: unknown;
  query: URLSearchParams;
  contentType: string | undefined;
  /** The authenticated user; undefined on an open server. */
  user?: { name: string; groups: readonly string[] } | undefined;
}

export interface ResourceResponse {
  code: number;
  body: unknown;
}

/** Kinds whose registry strategy has AllowCreateOnUpdate() true (coordination/lease/strategy.go). */
const CREATE_ON_UPDATE = new Set(['Lease']);
/** Kinds with a status subresource: updates of the main resource keep the stored status. */
const STATUS_SUBRESOURCE = new Set(['Node', 'CertificateSigningRequest', 'Namespace']);

const notFoundRoute = (): KubeApiError =>
  new KubeApiError(404, 'NotFound', 'the server could not find the requested resource');

/** `/api/v1/...` and `/apis/<group>/<version>/...`, matched against the served types. */
export function parseResourceRoute(path: string, types: readonly ResourceType[]): ResourceRoute {
  // Percent-encoded segments (clients encode ':' in names such as kubeadm:kubelet-bootstrap) are
  // decoded as the real server's request info resolver does; a malformed escape matches nothing.
  const parts = path
    .split('/')
    .filter((p) => p !== '')
    .map((p) => {
      try {
        return decodeURIComponent(p);
      } catch {
        throw notFoundRoute();
      }
    });
  let group: string;
  let version: string;
  let rest: string[];
  if (parts[0] === 'api' && parts.length >= 2) {
    group = '';
    version = parts[1] ?? '';
    rest = parts.slice(2);
  } else if (parts[0] === 'apis' && parts.length >= 3) {
    group = parts[1] ?? '';
    version = parts[2] ?? '';
    rest = parts.slice(3);
  } else throw notFoundRoute();
  let namespace: string | undefined;
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  const [resource, name, subresource, ...extra] = rest;
  const type = types.find((t) => t.group === group && t.version === version && t.resource === resource);
  const knownSubresource =
    subresource === undefined || (subresource === 'status' && STATUS_SUBRESOURCE.has(type?.kind ?? ''));
  if (type === undefined || extra.length > 0 || !knownSubresource || (namespace !== undefined && !type.namespaced))
    throw notFoundRoute();
  return { type, namespace, name, subresource };
}

/** `dryRun` must be absent or "All" (ValidateCreateOptions and friends: 422 otherwise). */
function isDryRun(query: URLSearchParams, method: string): boolean {
  const values = query.getAll('dryRun');
  for (const value of values) {
    if (value !== 'All') {
      const options =
        method === 'POST'
          ? 'CreateOptions'
          : method === 'DELETE'
            ? 'DeleteOptions'
            : method === 'PATCH'
              ? 'PatchOptions'
              : 'UpdateOptions';
      throw new KubeApiError(
        422,
        'Invalid',
        `${options}.meta.k8s.io "" is invalid: dryRun: Unsupported value: ${JSON.stringify(value)}: supported values: "All"`,
      );
    }
  }
  return values.length > 0;
}

/** Handles one request on a served resource. */
export function handleResourceRequest(
  store: KubeObjectStore,
  namespaces: ResourceType,
  request: ResourceRequest,
): ResourceResponse {
  const { method, route, query } = request;
  const { type, namespace, name, subresource } = route;
  if (type.namespaced && namespace !== undefined && !(method === 'GET' && name === undefined)) {
    store.get(namespaces, undefined, namespace); // the namespace must exist
  }
  if (name === undefined) {
    if (method === 'GET') {
      const { items, resourceVersion } = store.list(type, namespace, query.get('labelSelector') ?? undefined);
      return {
        code: 200,
        body: {
          kind: `${type.kind}List`,
          apiVersion: type.group === '' ? type.version : `${type.group}/${type.version}`,
          metadata: { resourceVersion },
          items,
        },
      };
    }
    if (method === 'POST') {
      const object = checked(type, prepareForCreate(type, decodeObject(type, request.body), request.user), true);
      admitNodeWrite(request.user, type, object, undefined);
      return { code: 201, body: store.create(type, namespace, object, { dryRun: isDryRun(query, method) }) };
    }
    throw new KubeApiError(405, 'MethodNotAllowed', `${method} is not supported on a collection`);
  }
  switch (method) {
    case 'GET':
      return { code: 200, body: store.get(type, namespace, name) };
    case 'PUT':
      return replace(store, route, name, decodeObject(type, request.body), isDryRun(query, method), request.user);
    case 'PATCH': {
      const format = patchFormat(request.contentType);
      const dryRun = isDryRun(query, method);
      const current = store.get(type, namespace, name);
      const patched = applyPatch(current, request.body, format, type.kind);
      const object = decodeObject(type, patched);
      // A patch carries the resourceVersion it read only if the client put one in it.
      const sent = patchedResourceVersion(request.body, format);
      const resourceVersion = sent ?? current.metadata.resourceVersion;
      if (resourceVersion !== undefined) object.metadata.resourceVersion = resourceVersion;
      return replace(store, route, name, object, dryRun, request.user);
    }
    case 'DELETE': {
      if (subresource !== undefined)
        throw new KubeApiError(405, 'MethodNotAllowed', `DELETE is not supported on ${subresource}`);
      store.delete(type, namespace, name, { dryRun: isDryRun(query, method) });
      return {
        code: 200,
        body: {
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Success',
          details: { name, kind: type.resource },
        },
      };
    }
    default:
      throw new KubeApiError(405, 'MethodNotAllowed', `${method} is not supported`);
  }
}

/**
 * Registry strategies' PrepareForCreate: a CertificateSigningRequest records who asked
 * (pkg/registry/certificates/certificates/strategy.go) and starts with no status.
 */
function prepareForCreate(type: ResourceType, object: KubeObject, user: ResourceRequest['user']): KubeObject {
  if (type.kind !== 'CertificateSigningRequest') return object;
  const spec = object['spec'];
  if (spec === null || typeof spec !== 'object') throw badRequest('spec: Required value');
  const { status: _ignored, ...rest } = object;
  return {
    ...rest,
    spec: { ...spec, username: user?.name ?? '', groups: [...(user?.groups ?? [])] },
  };
}

/** PUT semantics shared by update and patch: name match, status split, create-on-update. */
function replace(
  store: KubeObjectStore,
  route: ResourceRoute,
  name: string,
  sent: KubeObject,
  dryRun: boolean,
  user: ResourceRequest['user'],
): ResourceResponse {
  const { type, namespace, subresource } = route;
  const sentName = sent.metadata.name as unknown; // the body may carry no name: the URL's applies
  if (sentName === undefined || sentName === '') sent.metadata.name = name;
  if (sent.metadata.name !== name)
    throw badRequest(`the name of the object (${sent.metadata.name}) does not match the name on the URL (${name})`);
  let object = sent;
  const current = existing(store, type, namespace, name);
  if (STATUS_SUBRESOURCE.has(type.kind)) {
    if (current !== undefined) {
      // The main resource cannot change status; the status subresource changes nothing else.
      object =
        subresource === 'status'
          ? {
              ...current,
              status: sent['status'],
              metadata: withResourceVersion(current.metadata, sent.metadata.resourceVersion),
            }
          : { ...sent, status: current['status'] };
    }
  }
  const createIfMissing = CREATE_ON_UPDATE.has(type.kind) && subresource === undefined;
  admitNodeWrite(user, type, checked(type, object, current === undefined), current);
  const stored = store.replace(type, namespace, name, object, { dryRun, createIfMissing });
  return { code: current === undefined ? 201 : 200, body: stored };
}

function existing(
  store: KubeObjectStore,
  type: ResourceType,
  namespace: string | undefined,
  name: string,
): KubeObject | undefined {
  try {
    return store.get(type, namespace, name);
  } catch (err) {
    if (err instanceof KubeApiError && err.status.code === 404) return undefined;
    throw err;
  }
}

/** `metadata` carrying the resourceVersion the client sent (none: no precondition). */
function withResourceVersion(
  metadata: KubeObject['metadata'],
  resourceVersion: string | undefined,
): KubeObject['metadata'] {
  const { resourceVersion: _stored, ...rest } = metadata;
  return resourceVersion === undefined ? rest : { ...rest, resourceVersion };
}

function checked(type: ResourceType, object: KubeObject, creating: boolean): KubeObject {
  validateObject(type, object, creating);
  return object;
}

function patchedResourceVersion(patch: unknown, format: PatchFormat): string | undefined {
  if (format !== 'json') {
    const sent = (patch as { metadata?: { resourceVersion?: unknown } } | null)?.metadata?.resourceVersion;
    return typeof sent === 'string' ? sent : undefined;
  }
  const op = (patch as { op?: string; path?: string; value?: unknown }[]).find(
    (o) => (o.op === 'add' || o.op === 'replace') && o.path === '/metadata/resourceVersion',
  );
  return typeof op?.value === 'string' ? op.value : undefined;
}
