import type { RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { apiStatusCode } from './api-status-code.js';

/**
 * The ClusterRoleBindings kubeadm's bootstrap-token phase makes so that a bootstrap token can run
 * the kubelet's TLS bootstrap: create a client CSR (`kubeadm:kubelet-bootstrap`) and have it
 * approved for any node name (`kubeadm:node-autoapprove-bootstrap`, the `nodeclient`
 * subresource). Constellation's join tickets carry the kubelet client certificate, issued for the
 * registered machine only, so no node needs them; with them, a node's own ticket token could get a
 * client certificate in another node's name.
 */
export const NODE_CLIENT_BOOTSTRAP_BINDINGS = ['kubeadm:kubelet-bootstrap', 'kubeadm:node-autoapprove-bootstrap'];

/** Deletes those bindings (idempotent: absent ones are fine); returns the names it deleted. */
export async function removeNodeClientBootstrapGrants(rbac: RbacAuthorizationV1Api): Promise<string[]> {
  const deleted: string[] = [];
  for (const name of NODE_CLIENT_BOOTSTRAP_BINDINGS) {
    try {
      await rbac.deleteClusterRoleBinding({ name });
      deleted.push(name);
    } catch (err) {
      if (apiStatusCode(err) !== 404) throw err;
    }
  }
  return deleted;
}
