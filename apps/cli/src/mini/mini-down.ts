import { rm } from 'node:fs/promises';
import { stopApiServer } from '@constellation/sandbox';
import { workspaceFiles } from '../workspace.js';
import { miniDir, readMiniState, stopProcess } from './mini-state.js';
import { destroyNetwork } from './network.js';
import { readNodeJoinService } from './node-joinservice.js';

/** `constellation mini down`: stops every process of the mini cluster and removes its files unless `keep`. */
export async function miniDown(workspace: string, keep: boolean, print: (line: string) => void): Promise<void> {
  const state = await readMiniState(workspace);
  if (state === undefined) {
    print(`no mini cluster in ${workspace}`);
    return;
  }
  for (const node of state.nodes) {
    const joinService = await readNodeJoinService(node);
    if (joinService !== undefined) await stopProcess(joinService.pid);
  }
  for (const node of state.nodes) {
    await stopProcess(node.bootstrapperPid);
    await stopApiServer(node.dir);
    await stopProcess(node.swtpmPid);
  }
  await stopProcess(state.metadataPid);
  await destroyNetwork(state.network);
  print(
    `stopped ${state.nodes.length} nodes, the JoinService, the control plane and the metadata server${state.network.mode === 'namespaces' ? '; removed the network namespaces and bridge' : ''}`,
  );
  if (keep) {
    print(`kept ${miniDir(workspace)} for inspection`);
    return;
  }
  await rm(miniDir(workspace), { recursive: true, force: true });
  const files = workspaceFiles(workspace);
  for (const path of [files.config, files.state, files.masterSecret, files.initSecret, files.kubeconfig])
    await rm(path, { force: true });
  print(`removed ${miniDir(workspace)} and the workspace files`);
}
