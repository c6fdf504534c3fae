import type { KubeObject, ResourceType } from '../kube-object-store.js';
import { humanDuration } from './human-duration.js';

interface Column {
  name: string;
  type: 'string' | 'integer' | 'date';
  format?: 'name';
  /** 0: shown by default; 1: only with -o wide. */
  priority?: 1;
  description: string;
  cell: (object: KubeObject, now: number) => string | number;
}

type Unknown = Record<string, unknown>;
const field = (value: unknown, key: string): unknown =>
  value !== null && typeof value === 'object' ? (value as Unknown)[key] : undefined;
const count = (value: unknown): number => (value !== null && typeof value === 'object' ? Object.keys(value).length : 0);
const text = (value: unknown, fallback: string): string =>
  typeof value === 'string' && value !== '' ? value : fallback;

const NAME: Column = {
  name: 'Name',
  type: 'string',
  format: 'name',
  description: 'Name must be unique within a namespace.',
  cell: (object) => object.metadata.name,
};
const AGE: Column = {
  name: 'Age',
  type: 'string',
  description: 'CreationTimestamp is a timestamp representing the server time when this object was created.',
  cell: (object, now) => {
    const created = Date.parse(object.metadata.creationTimestamp ?? '');
    return Number.isNaN(created) ? '<unknown>' : humanDuration(now - created);
  },
};

/** printers.go printNode: "Ready"/"NotReady"/"Unknown" from the Ready condition, then SchedulingDisabled. */
function nodeStatus(node: KubeObject): string {
  const conditions = field(node['status'], 'conditions');
  const ready = Array.isArray(conditions)
    ? (conditions as unknown[]).find((c) => field(c, 'type') === 'Ready')
    : undefined;
  const statuses = [ready === undefined ? 'Unknown' : field(ready, 'status') === 'True' ? 'Ready' : 'NotReady'];
  if (field(node['spec'], 'unschedulable') === true) statuses.push('SchedulingDisabled');
  return statuses.join(',');
}

/** printers.go findNodeRoles: node-role.kubernetes.io/<role> labels and kubernetes.io/role=<role>. */
function nodeRoles(node: KubeObject): string {
  const roles = new Set<string>();
  for (const [key, value] of Object.entries(node.metadata.labels ?? {})) {
    if (key.startsWith('node-role.kubernetes.io/')) {
      const role = key.slice('node-role.kubernetes.io/'.length);
      if (role !== '') roles.add(role);
    } else if (key === 'kubernetes.io/role' && value !== '') roles.add(value);
  }
  return roles.size === 0 ? '<none>' : [...roles].sort().join(',');
}

function nodeAddress(node: KubeObject, type: string): string {
  const addresses = field(node['status'], 'addresses');
  const found = Array.isArray(addresses) ? (addresses as unknown[]).find((a) => field(a, 'type') === type) : undefined;
  return text(field(found, 'address'), '<none>');
}

const nodeInfo = (node: KubeObject, key: string): string =>
  text(field(field(node['status'], 'nodeInfo'), key), '<unknown>');

/** The columns of pkg/printers/internalversion/printers.go for the resources the stand-in serves. */
const COLUMNS: Record<string, readonly Column[]> = {
  nodes: [
    NAME,
    { name: 'Status', type: 'string', description: 'The status of the node', cell: nodeStatus },
    { name: 'Roles', type: 'string', description: 'The roles of the node', cell: nodeRoles },
    AGE,
    {
      name: 'Version',
      type: 'string',
      description: 'Kubelet Version reported by the node.',
      cell: (node) => text(field(field(node['status'], 'nodeInfo'), 'kubeletVersion'), ''),
    },
    {
      name: 'Internal-IP',
      type: 'string',
      priority: 1,
      description: 'List of addresses reachable to the node.',
      cell: (node) => nodeAddress(node, 'InternalIP'),
    },
    {
      name: 'External-IP',
      type: 'string',
      priority: 1,
      description: 'List of addresses reachable to the node.',
      cell: (node) => nodeAddress(node, 'ExternalIP'),
    },
    {
      name: 'OS-Image',
      type: 'string',
      priority: 1,
      description: 'OS Image reported by the node.',
      cell: (node) => nodeInfo(node, 'osImage'),
    },
    {
      name: 'Kernel-Version',
      type: 'string',
      priority: 1,
      description: 'Kernel Version reported by the node.',
      cell: (node) => nodeInfo(node, 'kernelVersion'),
    },
    {
      name: 'Container-Runtime',
      type: 'string',
      priority: 1,
      description: 'Container Runtime Version reported by the node.',
      cell: (node) => nodeInfo(node, 'containerRuntimeVersion'),
    },
  ],
  secrets: [
    NAME,
    {
      name: 'Type',
      type: 'string',
      description: 'Used to facilitate programmatic handling of secret data.',
      cell: (s) => text(s['type'], 'Opaque'),
    },
    { name: 'Data', type: 'integer', description: 'Data contains the secret data.', cell: (s) => count(s['data']) },
    AGE,
  ],
  configmaps: [
    NAME,
    {
      name: 'Data',
      type: 'integer',
      description: 'Data contains the configuration data.',
      cell: (c) => count(c['data']) + count(c['binaryData']),
    },
    AGE,
  ],
  leases: [
    NAME,
    {
      name: 'Holder',
      type: 'string',
      description: 'HolderIdentity contains the identity of the holder of a current lease.',
      cell: (l) => text(field(l['spec'], 'holderIdentity'), ''),
    },
    AGE,
  ],
  namespaces: [
    NAME,
    {
      name: 'Status',
      type: 'string',
      description: 'The status of the namespace',
      // The stand-in never terminates namespaces; the real server sets phase Active on create.
      cell: (n) => text(field(n['status'], 'phase'), 'Active'),
    },
    AGE,
  ],
};

/** rest.DefaultTableConvertor, for resources without a printer: Name and Created At. */
const DEFAULT_COLUMNS: readonly Column[] = [
  NAME,
  {
    name: 'Created At',
    type: 'date',
    description: 'CreationTimestamp is a timestamp representing the server time when this object was created.',
    cell: (object) => object.metadata.creationTimestamp ?? '',
  },
];

/**
 * Whether the client asked for a meta.k8s.io/v1 Table (kubectl get sends
 * `application/json;as=Table;v=v1;g=meta.k8s.io,...`).
 */
export function wantsTable(accept: string | undefined): boolean {
  return (accept ?? '').split(',').some((entry) => {
    const params = new Map(
      entry
        .split(';')
        .slice(1)
        .map((param) => param.trim().split('=') as [string, string | undefined]),
    );
    return params.get('as') === 'Table' && params.get('g') === 'meta.k8s.io' && params.get('v') === 'v1';
  });
}

export const TABLE_CONTENT_TYPE = 'application/json;as=Table;v=v1;g=meta.k8s.io';

/** A list or a single object as a meta.k8s.io/v1 Table, rows carrying PartialObjectMetadata. */
export function asTable(type: ResourceType, result: unknown, now: number = Date.now()): unknown {
  const list = field(result, 'items');
  const objects = (Array.isArray(list) ? list : [result]) as KubeObject[];
  const columns = COLUMNS[type.resource] ?? DEFAULT_COLUMNS;
  const resourceVersion = Array.isArray(list)
    ? field(field(result, 'metadata'), 'resourceVersion')
    : objects[0]?.metadata.resourceVersion;
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: { resourceVersion },
    columnDefinitions: columns.map((c) => ({
      name: c.name,
      type: c.type,
      format: c.format ?? '',
      description: c.description,
      priority: c.priority ?? 0,
    })),
    rows: objects.map((object) => ({
      cells: columns.map((c) => c.cell(object, now)),
      object: { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: object.metadata },
    })),
  };
}
