import { UsageError } from '@constellation/command-line';
import { selfCommand } from '../self-command.js';
import { writeWorkspaceFile } from '../workspace.js';
import type { MiniArtifacts } from './artifacts.js';
import type { Tamper } from './tamper.js';
import type { VmTamper } from './providers/vm-tamper.js';
import { miniClusterRecordPath, openMachine, readMiniClusterRecord } from '@constellation/machines';
import type { Machine, MiniClusterNode, MiniClusterRecord } from '@constellation/machines';

/** A node of mini as `mini up` records it: the record every tool reads, and what `mini down` needs. */
export interface MiniNode extends MiniClusterNode {
  /** swtpm's data channel (unix socket, mode 0600, in the node's directory); control at `<tpmSocket>.ctrl`. */
  tpmSocket: string;
  swtpmPid: number;
  /** SHA-256 of the TPM's EK public key, as registered with the metadata service. */
  ekPublicKeyHash: string;
  initPort: number;
  recoveryPort: number;
  verifyPort: number;
  tampered: boolean;
  /** How a tampered node differs (absent in records written before the modes existed). */
  tamper?: Tamper;
  /** How a tampered VM's boot differs from the node image. */
  vmTamper?: VmTamper;
}

/** What `mini down` needs to stop and remove; written as soon as anything runs. */
export interface MiniState extends MiniClusterRecord {
  startedAt: string;
  metadataPid: number;
  metadataUrl: string;
  /** Port every control plane's JoinService (its DaemonSet's pod, on the host network) serves on. */
  joinServicePort: number;
  apiServerPort: number;
  /** The programs the nodes run: the node image mini up copied into `dir` (see copyNodeImage); read it with nodeImage. */
  artifacts?: MiniArtifacts;
  nodes: MiniNode[];
}

export const readMiniState = (workspace: string): Promise<MiniState | undefined> =>
  readMiniClusterRecord<MiniState>(workspace);

/** The cluster's node image; a cluster started by a CLI from before node images has none. */
export function nodeImage(state: MiniState, workspace: string): MiniArtifacts {
  if (state.artifacts !== undefined) return state.artifacts;
  throw startedByOlderVersion(workspace, 'no node image');
}

/** The built programs' directory the cluster was started with (the node images lie beside it). */
export function kubernetesBinDirOf(state: MiniState, workspace: string): string {
  if (state.kubernetesBinDir !== undefined) return state.kubernetesBinDir;
  throw startedByOlderVersion(workspace, "no Kubernetes programs' directory");
}

function startedByOlderVersion(workspace: string, kept: string): UsageError {
  return new UsageError(
    `the mini cluster in ${workspace} was started by an older constellation, which kept ${kept}: run \`${selfCommand(workspace, ['mini', 'down'])}\`, then \`${selfCommand(workspace, ['mini', 'up'])}\``,
  );
}

export async function writeMiniState(workspace: string, state: MiniState): Promise<void> {
  await writeWorkspaceFile(miniClusterRecordPath(workspace), `${JSON.stringify(state, null, 2)}\n`, false);
}

/** The node's machine, through its provider. */
export const machineOf = (node: Pick<MiniNode, 'name' | 'dir' | 'provider'>): Machine =>
  openMachine({ provider: node.provider ?? 'namespaces', name: node.name, dir: node.dir });
