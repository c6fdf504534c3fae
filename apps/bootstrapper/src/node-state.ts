import { readFile } from 'node:fs/promises';
import { writeFileAtomic } from './secure-files.js';
import { errorMessage } from '@constellation/errors';
import { choiceField, objectAt, stringField } from './json-shape.js';

/** What a node remembers about its cluster (no secrets: the salt and ID are public). */
export interface NodeState {
  role: 'control-plane' | 'worker';
  measurementSalt: Buffer;
  clusterId: Buffer;
}

export async function writeNodeState(path: string, state: NodeState): Promise<void> {
  await writeFileAtomic(
    path,
    `${JSON.stringify({ role: state.role, measurementSalt: state.measurementSalt.toString('base64'), clusterId: state.clusterId.toString('hex') })}\n`,
  );
}

export async function readNodeState(path: string): Promise<NodeState> {
  const text = await readFile(path, 'utf8');
  try {
    const state = objectAt(JSON.parse(text), '', ['role', 'measurementSalt', 'clusterId']);
    return {
      role: choiceField(state, 'role', ['control-plane', 'worker'] as const),
      measurementSalt: Buffer.from(stringField(state, 'measurementSalt', { pattern: /^[A-Za-z0-9+/]+=*$/ }), 'base64'),
      clusterId: Buffer.from(stringField(state, 'clusterId', { pattern: /^[0-9a-f]{64}$/ }), 'hex'),
    };
  } catch (err) {
    throw new Error(`node state ${path}: ${errorMessage(err)}`, { cause: err });
  }
}
