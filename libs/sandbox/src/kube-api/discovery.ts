import { KubeApiError } from '../kube-api-status.js';
import type { ResourceType } from '../kube-object-store.js';

/** What real kube-apiserver lists for these resources: singular names and short names. */
const KNOWN: Record<string, { singularName: string; shortNames?: string[] }> = {
  namespaces: { singularName: 'namespace', shortNames: ['ns'] },
  nodes: { singularName: 'node', shortNames: ['no'] },
  secrets: { singularName: 'secret' },
  configmaps: { singularName: 'configmap', shortNames: ['cm'] },
  leases: { singularName: 'lease' },
  certificatesigningrequests: { singularName: 'certificatesigningrequest', shortNames: ['csr'] },
};

/** The verbs the stand-in implements (no watch, no deletecollection). */
const VERBS = ['create', 'delete', 'get', 'list', 'patch', 'update'];

/**
 * Legacy discovery documents (APIVersions, APIGroupList, APIResourceList) for `path`, or
 * undefined when `path` is not a discovery path. kubectl 1.32 asks for aggregated discovery
 * (Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList, ...,
 * application/json); answered with Content-Type application/json it falls back to legacy
 * discovery (client-go discovery_client.go), as against a server without aggregated discovery.
 * A group version the stand-in does not serve is 404.
 */
export function discoveryDocument(path: string, types: readonly ResourceType[], serverAddress: string): unknown {
  const parts = path.split('/').filter((part) => part !== '');
  if (parts.length === 1 && parts[0] === 'api') {
    return {
      kind: 'APIVersions',
      versions: ['v1'],
      serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
    };
  }
  if (parts.length === 1 && parts[0] === 'apis') {
    const groups = new Map<string, string[]>();
    for (const type of types.filter((t) => t.group !== '')) {
      const versions = groups.get(type.group) ?? [];
      if (!versions.includes(type.version)) versions.push(type.version);
      groups.set(type.group, versions);
    }
    return {
      kind: 'APIGroupList',
      apiVersion: 'v1',
      groups: [...groups].map(([name, versions]) => ({
        name,
        versions: versions.map((version) => ({ groupVersion: `${name}/${version}`, version })),
        preferredVersion: { groupVersion: `${name}/${versions[0] ?? ''}`, version: versions[0] ?? '' },
      })),
    };
  }
  const [root, first, second] = parts;
  const isCore = root === 'api' && parts.length === 2;
  const isGroup = root === 'apis' && parts.length === 3;
  if (!isCore && !isGroup) {
    if (root === 'apis' && parts.length === 2) return groupDocument(first ?? '', types);
    return undefined;
  }
  const group = isCore ? '' : (first ?? '');
  const version = isCore ? (first ?? '') : (second ?? '');
  const served = types.filter((t) => t.group === group && t.version === version);
  if (served.length === 0) throw new KubeApiError(404, 'NotFound', 'the server could not find the requested resource');
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: group === '' ? version : `${group}/${version}`,
    resources: served.map((type) => ({
      name: type.resource,
      singularName: KNOWN[type.resource]?.singularName ?? type.kind.toLowerCase(),
      namespaced: type.namespaced,
      kind: type.kind,
      verbs: VERBS,
      ...(KNOWN[type.resource]?.shortNames === undefined ? {} : { shortNames: KNOWN[type.resource]?.shortNames }),
    })),
  };
}

/** /apis/<group>: an APIGroup, or 404 for a group the stand-in does not serve. */
function groupDocument(group: string, types: readonly ResourceType[]): unknown {
  const versions = [...new Set(types.filter((t) => t.group === group).map((t) => t.version))];
  if (versions.length === 0)
    throw new KubeApiError(404, 'NotFound', 'the server could not find the requested resource');
  const entries = versions.map((version) => ({ groupVersion: `${group}/${version}`, version }));
  return { kind: 'APIGroup', apiVersion: 'v1', name: group, versions: entries, preferredVersion: entries[0] };
}
