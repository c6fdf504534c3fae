import type { Kubectl } from '@constellation/kubernetes-programs';

/**
 * kubeadm's CoreDNS prefers its two replicas on different nodes (a preferred pod anti-affinity),
 * but init schedules both while the first control plane is the only node, and there they stay:
 * cluster DNS goes down with that one node. Once workers are Ready, a rollout restart lets the
 * scheduler place the new replicas apart, as kubeadm intends; resolves when the rollout is done.
 */
export async function spreadCoreDns(admin: Kubectl, timeoutS = 120): Promise<void> {
  await admin.run(['-n', 'kube-system', 'rollout', 'restart', 'deployment/coredns']);
  await admin.run(['-n', 'kube-system', 'rollout', 'status', 'deployment/coredns', `--timeout=${String(timeoutS)}s`]);
}
