import * as grpc from '@grpc/grpc-js';
import { errorMessage } from '@constellation/errors';
import type { JoinStep } from './join-steps.js';
import { writeFileAtomic } from './secure-files.js';

/**
 * Where the node's join stands, as a small JSON file that operators and `constellation status`
 * read instead of parsing logs: what it last heard when it asked for a join ticket, then the join
 * step it is at past the point of no return. Holds no secret: messages are the JoinService's
 * refusals, which it writes for the caller, and the node's own failures.
 */
export interface JoinStatus {
  /**
   * Before the point of no return, one per ticket request: `refused` (the JoinService said no, or
   * the node refused the ticket), `unreachable` (no answer) or `ticket` (a ticket was issued and
   * checked). Past it: `joining` (at `step`), `joined`, or `failed` (at `step`; the node resets its
   * state disk and reboots).
   */
  state: 'refused' | 'unreachable' | 'ticket' | 'joining' | 'joined' | 'failed';
  /** The join step the state is about (join-steps.ts). */
  step: JoinStep;
  /** Ticket requests made, the one that brought the ticket included. */
  attempts: number;
  /** gRPC status name of the last refusal, for example PERMISSION_DENIED. */
  code?: string;
  message?: string;
  at: string;
}

/** The gRPC status codes with which the JoinService refuses (as opposed to not answering). */
const REFUSALS = new Set<number>([
  grpc.status.PERMISSION_DENIED,
  grpc.status.INVALID_ARGUMENT,
  grpc.status.FAILED_PRECONDITION,
  grpc.status.RESOURCE_EXHAUSTED,
]);

/** The outcome of ticket request `attempt` (from 0), which `failure` ended at `step`, if it failed. */
export function joinStatusOf(attempt: number, step: JoinStep, failure: unknown, at = new Date()): JoinStatus {
  const attempts = attempt + 1;
  const base = { step, attempts, at: at.toISOString() };
  if (failure === undefined) return { state: 'ticket', ...base };
  const code = (failure as { code?: unknown }).code;
  const details = (failure as { details?: unknown }).details;
  const message = typeof details === 'string' && details !== '' ? details : errorMessage(failure);
  if (typeof code !== 'number') return { state: 'unreachable', ...base, message };
  return {
    state: REFUSALS.has(code) ? 'refused' : 'unreachable',
    ...base,
    code: grpc.status[code] ?? String(code),
    message,
  };
}

/** Records where the join stands; a failure to record never stops the join. */
export async function recordJoinStatus(path: string, status: JoinStatus): Promise<void> {
  await writeFileAtomic(path, `${JSON.stringify(status)}\n`).catch(() => undefined);
}
