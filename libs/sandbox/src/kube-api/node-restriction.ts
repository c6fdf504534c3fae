import { forbidden } from '../kube-api-status.js';
import { qualifiedResource } from '../kube-object-store.js';
import type { KubeObject, ResourceType } from '../kube-object-store.js';
import { nodeIdentity } from './node-authorizer.js';

/*
 * The NodeRestriction admission plugin for what kubelets write here: their Node and their node
 * Lease (plugin/pkg/admission/noderestriction/admission.go, admitNode and admitLease). kubeadm
 * enables it (--enable-admission-plugins=NodeRestriction). The Node authorizer decides which
 * objects a kubelet may touch; this decides what it may put in them.
 */

/** Labels a kubelet may set on its Node (k8s.io/kubelet/pkg/apis/well_known_labels.go). */
const KUBELET_LABELS = new Set([
  'kubernetes.io/hostname',
  'topology.kubernetes.io/zone',
  'topology.kubernetes.io/region',
  'failure-domain.beta.kubernetes.io/zone',
  'failure-domain.beta.kubernetes.io/region',
  'beta.kubernetes.io/instance-type',
  'node.kubernetes.io/instance-type',
  'kubernetes.io/os',
  'kubernetes.io/arch',
  'beta.kubernetes.io/os',
  'beta.kubernetes.io/arch',
]);
const KUBELET_LABEL_NAMESPACES = ['kubelet.kubernetes.io', 'node.kubernetes.io'];
const NODE_RESTRICTION_NAMESPACE = 'node-restriction.kubernetes.io';

const labelNamespace = (key: string): string => (key.includes('/') ? (key.split('/', 1)[0] ?? '') : '');
const inNamespace = (namespace: string, of: string): boolean => namespace === of || namespace.endsWith(`.${of}`);

/** admission.go getForbiddenLabels, sorted as Go's sets.String lists them. */
function forbiddenLabels(modified: Iterable<string>): string[] {
  const forbidden = new Set<string>();
  for (const label of modified) {
    const namespace = labelNamespace(label);
    if (inNamespace(namespace, NODE_RESTRICTION_NAMESPACE)) forbidden.add(label);
    const kubernetes = inNamespace(namespace, 'kubernetes.io') || inNamespace(namespace, 'k8s.io');
    const kubelet = KUBELET_LABELS.has(label) || KUBELET_LABEL_NAMESPACES.some((n) => inNamespace(namespace, n));
    if (kubernetes && !kubelet) forbidden.add(label);
  }
  return [...forbidden].sort();
}

/** admission.go getModifiedLabels: keys added, removed or changed. */
function modifiedLabels(next: Record<string, string>, old: Record<string, string>): string[] {
  const keys = new Set([...Object.keys(next), ...Object.keys(old)]);
  return [...keys].filter((key) => next[key] !== old[key]);
}

const labelsOf = (object: KubeObject | undefined): Record<string, string> => object?.metadata.labels ?? {};

/** Semantic.DeepEqual: an absent and an empty list are equal. */
function taintsOf(object: KubeObject | undefined): string {
  const taints = (object?.['spec'] as { taints?: unknown } | undefined)?.taints;
  return JSON.stringify(Array.isArray(taints) && taints.length > 0 ? taints : []);
}

/**
 * Refuses what a kubelet may not write: a Node registered with labels outside the kubelet's set
 * (node-role.kubernetes.io/*, node-restriction.kubernetes.io/*), a Node update that changes its
 * taints or such labels, a node Lease under another node's name. Other users pass.
 */
export function admitNodeWrite(
  user: { name: string; groups: readonly string[] } | undefined,
  type: ResourceType,
  object: KubeObject,
  old: KubeObject | undefined,
): void {
  const node = user === undefined ? undefined : nodeIdentity(user);
  if (node === undefined) return;
  const name = object.metadata.name;
  if (type.group === '' && type.resource === 'nodes') {
    if (old === undefined) {
      const labels = forbiddenLabels(Object.keys(labelsOf(object)));
      if (labels.length > 0)
        throw forbidden(
          qualifiedResource(type),
          name,
          `node "${node}" is not allowed to set the following labels: ${labels.join(', ')}`,
        );
      return;
    }
    if (taintsOf(object) !== taintsOf(old))
      throw forbidden(qualifiedResource(type), name, `node "${node}" is not allowed to modify taints`);
    const labels = forbiddenLabels(modifiedLabels(labelsOf(object), labelsOf(old)));
    if (labels.length > 0)
      throw forbidden(qualifiedResource(type), name, `is not allowed to modify labels: ${labels.join(', ')}`);
    return;
  }
  if (type.group === 'coordination.k8s.io' && type.resource === 'leases' && name !== node)
    throw forbidden(
      qualifiedResource(type),
      name,
      'can only access node lease with the same name as the requesting node',
    );
}
