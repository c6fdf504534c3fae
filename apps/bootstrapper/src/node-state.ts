import { readFile } from 'node:fs/promises';
import { writeFileAtomic } from './secure-files.js';
import * as z from 'zod/mini';
import { firstIssue } from './zod-mini.js';

const schema = z.strictObject({
  role: z.enum(['control-plane', 'worker']),
  measurementSalt: z.string().check(z.regex(/^[A-Za-z0-9+/]+=*$/)),
  clusterId: z.string().check(z.regex(/^[0-9a-f]{64}$/)),
});

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
  const result = schema.safeParse(JSON.parse(await readFile(path, 'utf8')));
  if (!result.success) throw new Error(`node state ${path}: ${firstIssue(result.error)}`);
  const parsed = result.data;
  return {
    role: parsed.role,
    measurementSalt: Buffer.from(parsed.measurementSalt, 'base64'),
    clusterId: Buffer.from(parsed.clusterId, 'hex'),
  };
}
