import type { Machine } from '@constellation/machines';

/** What a node's bootstrapper recorded about its last ticket request (run/constellation/join-status.json). */
export interface NodeJoinStatus {
  state: 'refused' | 'unreachable' | 'ticket';
  attempts: number;
  code?: string;
  message?: string;
  at: string;
}

/** The bootstrapper's record on the node, or undefined while it has written none (or it cannot be read). */
export async function readJoinStatus(machine: Machine): Promise<NodeJoinStatus | undefined> {
  try {
    const text = await machine.readFile('/run/constellation/join-status.json');
    return text === undefined ? undefined : (JSON.parse(text.toString('utf8')) as NodeJoinStatus);
  } catch {
    return undefined;
  }
}
