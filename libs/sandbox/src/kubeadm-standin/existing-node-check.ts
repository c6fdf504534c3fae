import { httpsJson } from './https-json.js';

/*
 * kubeadm join's kubelet-start phase, before the kubelet's TLS bootstrap
 * (cmd/kubeadm/app/cmd/phases/join/kubelet.go runKubeletStartJoinPhase): with the TLS bootstrap
 * token (RBAC kubeadm:get-nodes) it reads the Node of the joining name and refuses the join when
 * that Node's Ready condition is True; a missing Node is fine, any other failure is an error.
 * Returns kubeadm's message, or undefined when the join may go on.
 */
export async function existingReadyNodeError(
  server: string,
  caPem: string,
  token: string,
  nodeName: string,
): Promise<string | undefined> {
  const res = await httpsJson(`${server}/api/v1/nodes/${encodeURIComponent(nodeName)}`, {
    ca: caPem,
    credential: { token },
  });
  if (res.status === 404) return undefined;
  const body = res.body as { message?: unknown; status?: { conditions?: { type?: string; status?: string }[] } };
  if (res.status !== 200)
    return `cannot get Node "${nodeName}": ${typeof body.message === 'string' ? body.message : `status ${res.status}`}`;
  const ready = body.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
  return ready
    ? `a Node with name "${nodeName}" and status "Ready" already exists in the cluster. You must delete the existing Node or change the name of this new joining Node`
    : undefined;
}
