import type { StateDisk } from '@constellation/state-disk';
import { errorMessage } from '@constellation/errors';
import { choiceField, objectAt, stringField } from './json-shape.js';

/** What a node remembers about its cluster (no secrets: the salt and ID are public). */
export interface NodeState {
  role: 'control-plane' | 'worker';
  measurementSalt: Buffer;
  clusterId: Buffer;
}

/**
 * Kept in the state disk's LUKS2 token, beside the initialised mark: a rebooted node reads it
 * before it has the key that opens the disk's file system (its rejoin checks the key against it).
 */
export async function writeNodeState(disk: StateDisk, state: NodeState): Promise<void> {
  await disk.setNodeState({
    role: state.role,
    measurementSalt: state.measurementSalt.toString('base64'),
    clusterId: state.clusterId.toString('hex'),
  });
}

export async function readNodeState(disk: StateDisk): Promise<NodeState> {
  const stored = await disk.nodeState();
  try {
    if (stored === undefined) throw new Error('the token holds none (the disk was initialised without it)');
    const state = objectAt(stored, '', ['role', 'measurementSalt', 'clusterId']);
    return {
      role: choiceField(state, 'role', ['control-plane', 'worker'] as const),
      measurementSalt: Buffer.from(stringField(state, 'measurementSalt', { pattern: /^[A-Za-z0-9+/]+=*$/ }), 'base64'),
      clusterId: Buffer.from(stringField(state, 'clusterId', { pattern: /^[0-9a-f]{64}$/ }), 'hex'),
    };
  } catch (err) {
    throw new Error(`node state in the state disk's token (${disk.device}): ${errorMessage(err)}`, { cause: err });
  }
}
