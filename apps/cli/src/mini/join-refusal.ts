import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

/** What a node's bootstrapper recorded about its last ticket request (run/constellation/join-status.json). */
export interface NodeJoinStatus {
  state: 'refused' | 'unreachable' | 'ticket';
  attempts: number;
  code?: string;
  message?: string;
  at: string;
}

export async function readJoinStatus(nodeDir: string): Promise<NodeJoinStatus | undefined> {
  try {
    return JSON.parse(
      await readFile(join(nodeDir, 'run', 'constellation', 'join-status.json'), 'utf8'),
    ) as NodeJoinStatus;
  } catch {
    return undefined;
  }
}
