import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { UsageError } from '@constellation/command-line';
import { selfCommand } from '../self-command.js';
import { writeWorkspaceFile } from '../workspace.js';
import type { MiniArtifacts } from './artifacts.js';
import type { MiniNetwork } from '@constellation/node-environment';
import type { Tamper } from './tamper.js';
import type { VmTamper } from './providers/vm-tamper.js';
import { openMachine } from '@constellation/machines';
import type { Machine, MachineProvider } from '@constellation/machines';

export interface MiniNode {
  name: string;
  role: 'control-plane' | 'worker';
  ip: string;
  dir: string;
  /** What the machine is made of (absent in records written before providers: namespaces). */
  provider?: MachineProvider;
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
export interface MiniState {
  startedAt: string;
  dir: string;
  metadataPid: number;
  metadataUrl: string;
  /** Port every control plane's JoinService (its DaemonSet's pod, on the host network) serves on. */
  joinServicePort: number;
  apiServerPort: number;
  network: MiniNetwork;
  /** The built Kubernetes programs the control plane runs from (and kubectl). */
  kubernetesBinDir?: string;
  /** The programs the nodes run: the node image mini up copied into `dir` (see copyNodeImage); read it with nodeImage. */
  artifacts?: MiniArtifacts;
  nodes: MiniNode[];
}

export const miniDir = (workspace: string): string => join(workspace, 'constellation-mini');
export const miniStatePath = (workspace: string): string => join(miniDir(workspace), 'mini.json');

export async function readMiniState(workspace: string): Promise<MiniState | undefined> {
  try {
    return JSON.parse(await readFile(miniStatePath(workspace), 'utf8')) as MiniState;
  } catch {
    return undefined;
  }
}

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
  await writeWorkspaceFile(miniStatePath(workspace), `${JSON.stringify(state, null, 2)}\n`, false);
}

/** The node's machine, through its provider. */
export const machineOf = (node: Pick<MiniNode, 'name' | 'dir' | 'provider'>): Machine =>
  openMachine({ provider: node.provider ?? 'namespaces', name: node.name, dir: node.dir });
