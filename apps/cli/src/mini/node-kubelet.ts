import { UsageError } from '@constellation/command-line';
import { pathExists } from '@constellation/files';
import { workspaceFiles } from '../workspace.js';
import { nodeImage, readMiniState } from './mini-state.js';
import { startNodeJoinService } from './node-joinservice.js';

/** The node's API endpoint as every node sees it: the first control plane's API server port. */
export function apiServerEndpoint(state: { nodes: { ip: string }[]; apiServerPort: number }): string {
  return `${state.nodes[0]?.ip ?? '127.0.0.1'}:${state.apiServerPort}`;
}

/**
 * The hidden `mini kubelet --node <name>`: what "start the kubelet" means on a mini node. A real
 * kubelet would start the node's DaemonSet pods; here a control plane gets its JoinService
 * (again, after a reboot or a recovery) once the cluster exists. Workers run nothing.
 */
export async function miniKubelet(workspace: string, name: string, print: (line: string) => void): Promise<void> {
  const state = await readMiniState(workspace);
  if (state === undefined) throw new UsageError(`no mini cluster in ${workspace}`);
  const node = state.nodes.find((n) => n.name === name);
  if (node === undefined) throw new UsageError(`no node "${name}" in the mini cluster`);
  if (node.role !== 'control-plane') return;
  const files = workspaceFiles(workspace);
  const initialised = await Promise.all([files.state, files.masterSecret].map(pathExists));
  // During the first init the CLI has not written them yet; `mini up` starts this JoinService itself.
  if (initialised.includes(false)) return;
  const service = await startNodeJoinService({
    workspace,
    state,
    node,
    artifacts: nodeImage(state, workspace),
    apiServerEndpoint: apiServerEndpoint(state),
  });
  print(`${name}: JoinService serving on ${service.host}:${service.port} (pid ${service.pid})`);
}
