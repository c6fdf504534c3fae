import * as grpc from '@grpc/grpc-js';
import { errorMessage } from '@constellation/errors';
import { writeFileAtomic } from './secure-files.js';

/**
 * What the node last heard when it asked for a join ticket, as a small JSON file that operators
 * and `constellation status` read instead of parsing logs. Holds no secret: messages are the
 * JoinService's refusals, which it writes for the caller.
 */
export interface JoinStatus {
  /** `refused`: the JoinService said no; `unreachable`: no answer; `ticket`: a ticket was issued. */
  state: 'refused' | 'unreachable' | 'ticket';
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

export function joinStatusOf(attempt: number, failure: unknown, at = new Date()): JoinStatus {
  const attempts = attempt + 1;
  if (failure === undefined) return { state: 'ticket', attempts, at: at.toISOString() };
  const code = (failure as { code?: unknown }).code;
  const details = (failure as { details?: unknown }).details;
  const message = typeof details === 'string' && details !== '' ? details : errorMessage(failure);
  if (typeof code !== 'number') return { state: 'unreachable', attempts, message, at: at.toISOString() };
  return {
    state: REFUSALS.has(code) ? 'refused' : 'unreachable',
    attempts,
    code: grpc.status[code] ?? String(code),
    message,
    at: at.toISOString(),
  };
}

/** Records the outcome of one ticket request; a failure to record never stops the join. */
export async function recordJoinStatus(path: string, status: JoinStatus): Promise<void> {
  await writeFileAtomic(path, `${JSON.stringify(status)}\n`).catch(() => undefined);
}
