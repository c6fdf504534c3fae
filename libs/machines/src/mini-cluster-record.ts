import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { MiniNetwork } from '@constellation/node-environment';
import type { MachineProvider } from './machine.js';

/** One node of a mini cluster, as its record names it. */
export interface MiniClusterNode {
  name: string;
  role: 'control-plane' | 'worker';
  ip: string;
  /** The node's directory: its machine record is there (openMachineAt). */
  dir: string;
  /** What the machine is made of (absent in records written before providers: namespaces). */
  provider?: MachineProvider;
}

/**
 * A running mini cluster's record (`<workspace>/constellation-mini/mini.json`): what every tool that
 * works on a mini cluster reads. `constellation mini up` writes it, with fields of its own besides.
 */
export interface MiniClusterRecord {
  /** The cluster's directory. */
  dir: string;
  network: MiniNetwork;
  /** The built Kubernetes programs the control plane runs from (absent in records of older CLIs). */
  kubernetesBinDir?: string;
  nodes: MiniClusterNode[];
}

/** The directory of the mini cluster in `workspace`. */
export const miniClusterDir = (workspace: string): string => join(workspace, 'constellation-mini');

/** Where the mini cluster in `workspace` keeps its record. */
export const miniClusterRecordPath = (workspace: string): string => join(miniClusterDir(workspace), 'mini.json');

/** The record of the mini cluster in `workspace`, or undefined when none runs there (or it cannot be read). */
export async function readMiniClusterRecord<Record extends MiniClusterRecord = MiniClusterRecord>(
  workspace: string,
): Promise<Record | undefined> {
  try {
    return JSON.parse(await readFile(miniClusterRecordPath(workspace), 'utf8')) as Record;
  } catch {
    return undefined;
  }
}
