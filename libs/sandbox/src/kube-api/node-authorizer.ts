import { NODES_GROUP } from './authorization-rules.js';
import type { RequestAttributes } from './request-attributes.js';

export type Decision = { allowed: true } | { allowed: false; reason: string };

const NODE_USER_PREFIX = 'system:node:';
const NO_OPINION: Decision = { allowed: false, reason: '' };

/**
 * The Node authorizer (plugin/pkg/auth/authorizer/node/node_authorizer.go) for what the
 * stand-in serves. A node may read secrets and configmaps only when a pod bound to it uses them;
 * the stand-in has no pods, so it may read none (kubeadm's Roles grant it kubeadm-config and
 * kubelet-config through RBAC). Node leases only in kube-node-lease and only its own
 * (authorizeLease). Node objects only its own: what the NodeRestriction admission plugin
 * enforces for writes, narrowed here to reads too, since a kubelet reads only its own Node.
 */
export function authorizeNode(attributes: RequestAttributes): Decision {
  const nodeName = nodeIdentity(attributes.user);
  if (nodeName === undefined || !attributes.resourceRequest) return NO_OPINION;
  if (nodeName === '') return { allowed: false, reason: `unknown node for user "${attributes.user.name}"` };
  const { verb, apiGroup, resource, subresource, namespace, name } = attributes;
  if (apiGroup === '' && (resource === 'secrets' || resource === 'configmaps')) {
    if (verb !== 'get' && verb !== 'list' && verb !== 'watch')
      return { allowed: false, reason: 'can only read resources of this type' };
    if (subresource !== '') return { allowed: false, reason: 'cannot read subresource' };
    if (namespace === '') return { allowed: false, reason: 'can only read namespaced object of this type' };
    if (name === '') return { allowed: false, reason: 'No Object name found' };
    return { allowed: false, reason: `no relationship found between node '${nodeName}' and this object` };
  }
  if (apiGroup === 'coordination.k8s.io' && resource === 'leases') {
    if (!['get', 'create', 'update', 'patch', 'delete'].includes(verb))
      return { allowed: false, reason: 'can only get, create, update, patch, or delete a node lease' };
    if (namespace !== 'kube-node-lease')
      return { allowed: false, reason: 'can only access leases in the "kube-node-lease" system namespace' };
    if (verb !== 'create' && name !== nodeName)
      return { allowed: false, reason: 'can only access node lease with the same name as the requesting node' };
    return { allowed: true };
  }
  if (apiGroup === '' && resource === 'nodes' && (subresource === '' || subresource === 'status')) {
    if (!['get', 'create', 'update', 'patch'].includes(verb) || (subresource === 'status' && verb === 'create'))
      return { allowed: false, reason: 'can only get, create, update or patch its own Node object' };
    if (name !== nodeName)
      return {
        allowed: false,
        reason:
          verb === 'get'
            ? `node "${nodeName}" can only read its own Node object`
            : `node "${nodeName}" is not allowed to modify node "${name}"`,
      };
    return { allowed: true };
  }
  return NO_OPINION;
}

/** pkg/auth/nodeidentifier: a node is a user "system:node:<name>" in the group system:nodes. */
export function nodeIdentity(user: { name: string; groups: readonly string[] }): string | undefined {
  if (!user.groups.includes(NODES_GROUP) || !user.name.startsWith(NODE_USER_PREFIX)) return undefined;
  return user.name.slice(NODE_USER_PREFIX.length);
}
