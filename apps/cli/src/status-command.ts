import * as k8s from '@kubernetes/client-node';
import { UsageError } from '@constellation/command-line';
import { readClusterState } from './cluster-state.js';
import { joinProblem, readJoinStatus } from './mini/join-refusal.js';
import { machineOf, readMiniState } from './mini/mini-state.js';
import { nodeReady } from './mini/wait-for-nodes.js';
import { workspaceFiles } from './workspace.js';

export interface NodeStatus {
  name: string;
  role: string;
  joined: boolean;
  /** The Ready condition of the node's Node object in the API (false when not in the cluster). */
  ready: boolean;
  kubernetesVersion: string;
  /** What the cluster knows of the node's attestation: admitted, or (mini) its last refusal. */
  attestation: string;
  /** Why the node is not in the cluster, when known (mini: its last refusal). */
  problem?: string;
}

/**
 * `constellation status`: the cluster's nodes from the API (role, Ready condition, version); for a
 * mini cluster also the machines that did not join and what their bootstrapper last heard.
 */
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
    ready: nodeReady(n),
    kubernetesVersion: n.status?.nodeInfo?.kubeletVersion ?? state.kubernetesVersion,
    // Only attested nodes get a join ticket or the init secret: membership is the attestation result.
    attestation: 'attested',
  }));
  const mini = await readMiniState(workspace);
  for (const machine of mini?.nodes ?? []) {
    if (nodes.some((n) => n.name === machine.name)) continue;
    const recorded = await readJoinStatus(machineOf(machine));
    const off = !(await machineOf(machine)
      .poweredOn()
      .catch(() => true));
    const problem = off ? 'powered off' : joinProblem(recorded);
    nodes.push({
      name: machine.name,
      role: machine.role,
      joined: false,
      ready: false,
      kubernetesVersion: '',
      attestation: recorded?.state === 'refused' ? 'refused' : 'unknown',
      problem,
    });
  }
  return { clusterId: state.clusterId, nodes };
}
