import { readFile } from 'node:fs/promises';
import { parse, stringify } from 'yaml';
import { z } from 'zod';
import { UsageError } from '@constellation/command-line';
import { writeWorkspaceFile } from './workspace.js';

const schema = z.object({
  clusterId: z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 hex characters'),
  /** base64 of the 32-byte measurement salt. */
  measurementSalt: z.string().min(1),
  initEndpoint: z.string().min(1),
  kubernetesVersion: z.string().min(1),
});

/** `constellation-state.yaml`: what `init` learned about the cluster it created (no secrets). */
export type ClusterState = z.infer<typeof schema>;

export async function writeClusterState(path: string, state: ClusterState): Promise<void> {
  await writeWorkspaceFile(path, stringify(state), false);
}

/** The state file, or undefined when there is none; a damaged file is an error naming the field. */
export async function readClusterState(path: string): Promise<ClusterState | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const parsed = schema.safeParse(parse(text));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new UsageError(`${path}: ${issue?.path.map(String).join('.') ?? ''}: ${issue?.message ?? 'invalid'}`);
  }
  return parsed.data;
}
