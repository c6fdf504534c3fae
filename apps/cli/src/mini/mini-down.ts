import { readdir, rm } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { errorMessage } from '@constellation/errors';
import { pathExists } from '@constellation/files';
import { miniClusterDir, openMachineAt } from '@constellation/machines';
import { stopProcess } from '@constellation/process';
import { destroyNetwork } from '@constellation/node-environment';
import { workspaceFiles } from '../workspace.js';
import { readMiniState } from './mini-state.js';

/**
 * Every machine's directory, whether or not `mini up` got as far as recording the node: one that
 * failed half-way has its TPM and environment too.
 */
async function machineDirs(clusterDir: string): Promise<string[]> {
  const entries = await readdir(clusterDir, { withFileTypes: true }).catch(() => []);
  const dirs = entries.filter((e) => e.isDirectory()).map((e) => join(clusterDir, e.name));
  const machines = await Promise.all(dirs.map((dir) => pathExists(join(dir, 'tpm'))));
  return dirs.filter((_, i) => machines[i] === true).sort();
}

/**
 * `constellation mini down`: powers every node off (its units, then whatever is left in its cgroup
 * root and mount namespace: pods, shims), removes the nodes' namespaces and cgroups, stops the TPMs
 * and the metadata server, removes the network, and the files unless `keep`.
 */
export async function miniDown(workspace: string, keep: boolean, print: (line: string) => void): Promise<void> {
  const state = await readMiniState(workspace);
  if (state === undefined) {
    print(`no mini cluster in ${workspace}`);
    return;
  }
  const failures: string[] = [];
  const dirs = await machineDirs(state.dir);
  for (const dir of [...dirs].reverse()) {
    // The machine of a directory, whichever provider made it; one made half-way is removed too.
    const machine = await openMachineAt(dir).catch((err: unknown) => {
      failures.push(`${basename(dir)}: ${errorMessage(err)}`);
      return undefined;
    });
    await machine?.destroy().catch((err: unknown) => {
      failures.push(`${basename(dir)}: ${errorMessage(err)}`);
    });
  }
  await stopProcess(state.metadataPid);
  await destroyNetwork(state.network);
  print(
    // Every machine found, recorded or not: one `mini up` made half-way counts too.
    `stopped ${String(dirs.length)} node${dirs.length === 1 ? '' : 's'} (kubelet, containers, containerd, bootstrapper, TPM) and the metadata server${state.network.mode === 'namespaces' ? "; removed the nodes' namespaces, cgroups and the bridge" : ''}`,
  );
  if (failures.length > 0) throw new Error(`some nodes did not stop cleanly:\n${failures.join('\n')}`);
  if (keep) {
    print(`kept ${miniClusterDir(workspace)} for inspection`);
    return;
  }
  await rm(miniClusterDir(workspace), { recursive: true, force: true });
  const files = workspaceFiles(workspace);
  for (const path of [files.config, files.state, files.masterSecret, files.initSecret, files.kubeconfig])
    await rm(path, { force: true });
  print(`removed ${miniClusterDir(workspace)} and the workspace files`);
}
