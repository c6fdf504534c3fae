import * as k8s from '@kubernetes/client-node';
import { UsageError } from '@constellation/command-line';
import { readClusterState } from './cluster-state.js';
import { lastJoinRefusal } from './mini/join-refusal.js';
import { readMiniState } from './mini/mini-state.js';
import { workspaceFiles } from './workspace.js';

export interface NodeStatus {
  name: string;
  role: string;
  joined: boolean;
  kubernetesVersion: string;
  /** Why the node is not in the cluster, when known (mini: its last refusal). */
  problem?: string;
}

/** `constellation status`: the cluster's nodes, and for a mini cluster also the machines that did not join and why. */
export async function clusterStatus(workspace: string): Promise<{ clusterId: string; nodes: NodeStatus[] }> {
  const files = workspaceFiles(workspace);
  const state = await readClusterState(files.state);
  if (state === undefined) {
    throw new UsageError(
      `no cluster state at ${files.state}: run \`constellation init\` (or \`constellation mini up\`) first`,
    );
  }
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(files.kubeconfig);
  const items = (await kc.makeApiClient(k8s.CoreV1Api).listNode()).items;
  const nodes: NodeStatus[] = items.map((n) => ({
    name: n.metadata?.name ?? '',
    role: n.metadata?.labels?.['node-role.kubernetes.io/control-plane'] === undefined ? 'worker' : 'control-plane',
    joined: true,
    kubernetesVersion: state.kubernetesVersion,
  }));
  const mini = await readMiniState(workspace);
  for (const machine of mini?.nodes ?? []) {
    if (nodes.some((n) => n.name === machine.name)) continue;
    const refusal = await lastJoinRefusal(machine.dir);
    nodes.push({
      name: machine.name,
      role: machine.role,
      joined: false,
      kubernetesVersion: '',
      problem: refusal ?? 'not joined yet',
    });
  }
  return { clusterId: state.clusterId, nodes };
}
