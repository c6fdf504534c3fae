import type { Machine } from '@constellation/machines';

/**
 * Where a node's join stands, as its bootstrapper records it (run/constellation/join-status.json):
 * the outcome of its last ticket request, then the join step it is at past the point of no return.
 */
export interface NodeJoinStatus {
  state: 'refused' | 'unreachable' | 'ticket' | 'joining' | 'joined' | 'failed';
  /** The join step the state is about, for example kubeadm-join. */
  step?: string;
  attempts: number;
  code?: string;
  message?: string;
  at: string;
}

/** What an operator reads for a node that is not (yet) in the cluster's node list. */
export function joinProblem(recorded: NodeJoinStatus | undefined): string {
  if (recorded === undefined) return 'not joined yet';
  switch (recorded.state) {
    case 'refused':
      return recorded.message ?? 'refused';
    case 'failed':
      return recorded.message ?? `join step ${recorded.step ?? '?'} failed`;
    case 'joining':
      return `joining: at join step ${recorded.step ?? '?'} since ${recorded.at}`;
    case 'joined':
      return 'joined; its Node object is not listed yet';
    case 'ticket':
    case 'unreachable':
      return `not joined yet (JoinService ${recorded.state === 'ticket' ? 'issued a ticket' : 'not reachable'} after ${recorded.attempts} attempts)`;
  }
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
