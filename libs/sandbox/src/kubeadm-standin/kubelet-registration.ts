import type { Taint } from './config-defaults.js';
import type { Credential } from './https-json.js';
import { httpsJson } from './https-json.js';

/*
 * What the kubelet does once it has its client certificate: register its Node
 * (pkg/kubelet/kubelet_node_status.go registerWithAPIServer) with the well-known labels, its
 * addresses and a Ready condition, using its own credentials (system:node:<name>). `taints` are
 * its --register-with-taints, which kubeadm join writes into kubeadm-flags.env for a worker
 * (cmd/kubeadm/app/cmd/phases/join/kubelet.go: registerTaintsUsingFlags when no controlPlane;
 * init and control-plane joins leave the taints to mark-control-plane).
 */

export async function registerNode(
  server: string,
  caPem: string,
  credential: Credential,
  nodeName: string,
  nodeIp: string | undefined,
  taints: readonly Taint[] = [],
): Promise<void> {
  const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
  const ready = {
    type: 'Ready',
    status: 'True',
    reason: 'KubeletReady',
    message: 'kubelet is posting ready status',
    lastHeartbeatTime: now,
    lastTransitionTime: now,
  };
  const status = {
    conditions: [ready],
    addresses: [
      ...(nodeIp === undefined ? [] : [{ type: 'InternalIP', address: nodeIp }]),
      { type: 'Hostname', address: nodeName },
    ],
  };
  const body = {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: nodeName,
      labels: { 'kubernetes.io/hostname': nodeName, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64' },
    },
    ...(taints.length > 0 ? { spec: { taints } } : {}),
    status,
  };
  const created = await httpsJson(`${server}/api/v1/nodes`, { method: 'POST', ca: caPem, credential, body });
  if (created.status === 201) return;
  if (created.status !== 409)
    throw new Error(`cannot register node "${nodeName}": ${describe(created.status, created.body)}`);
  // Already registered (a re-join): report Ready through the status subresource.
  const patched = await httpsJson(`${server}/api/v1/nodes/${nodeName}/status`, {
    method: 'PATCH',
    ca: caPem,
    credential,
    contentType: 'application/merge-patch+json',
    body: { status },
  });
  if (patched.status !== 200)
    throw new Error(`cannot update node "${nodeName}": ${describe(patched.status, patched.body)}`);
}

function describe(status: number, body: unknown): string {
  const message = (body as { message?: unknown } | undefined)?.message;
  return `status ${status}${typeof message === 'string' ? `: ${message}` : ''}`;
}
