import type { Credential } from './https-json.js';
import { httpsJson } from './https-json.js';

/*
 * What the kubelet does once it has its client certificate: register its Node
 * (pkg/kubelet/kubelet_node_status.go registerWithAPIServer) with the well-known labels, its
 * addresses and a Ready condition, using its own credentials (system:node:<name>).
 */

export async function registerNode(
  server: string,
  caPem: string,
  credential: Credential,
  nodeName: string,
  nodeIp: string | undefined,
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

/**
 * kubeadm's mark-control-plane phase (cmd/kubeadm/app/phases/markcontrolplane): the control-plane
 * role label and taint, set with kubeadm's admin credentials (NodeRestriction forbids a kubelet
 * to label itself with node-role.kubernetes.io/*).
 */
export async function markControlPlane(
  server: string,
  caPem: string,
  admin: Credential,
  nodeName: string,
): Promise<void> {
  const res = await httpsJson(`${server}/api/v1/nodes/${nodeName}`, {
    method: 'PATCH',
    ca: caPem,
    credential: admin,
    contentType: 'application/merge-patch+json',
    body: {
      metadata: {
        labels: {
          'node-role.kubernetes.io/control-plane': '',
          'node.kubernetes.io/exclude-from-external-load-balancers': '',
        },
      },
      spec: { taints: [{ key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' }] },
    },
  });
  if (res.status !== 200)
    throw new Error(`cannot mark node "${nodeName}" as control plane: ${describe(res.status, res.body)}`);
}

function describe(status: number, body: unknown): string {
  const message = (body as { message?: unknown } | undefined)?.message;
  return `status ${status}${typeof message === 'string' ? `: ${message}` : ''}`;
}
