import * as grpc from '@grpc/grpc-js';
import { Refusal } from '@constellation/errors';
import type { RefusalKind } from '@constellation/errors';

/**
 * An error with a gRPC status, thrown by service handlers to answer with that status. The message
 * goes to the caller, so it must say what failed without revealing secrets.
 */
export class StatusError extends Error {
  override readonly name = 'StatusError';
  readonly code: grpc.status;
  readonly metadata: grpc.Metadata;
  /** Why, as a stable label for metrics (for example "rate-limited"); "other" when not given. */
  readonly reason: string;

  constructor(code: grpc.status, message: string, metadata: Record<string, string> = {}, reason = 'other') {
    super(message);
    this.code = code;
    this.reason = reason;
    this.metadata = new grpc.Metadata();
    for (const [key, value] of Object.entries(metadata)) this.metadata.set(key, value);
  }
}

/** The `retry-after-ms` trailer a retryable refusal carries: when the caller should come back. */
export function retryAfterMetadata(ms: number): grpc.Metadata {
  const metadata = new grpc.Metadata();
  metadata.set('retry-after-ms', String(ms));
  return metadata;
}

const STATUS_OF: Record<RefusalKind, grpc.status> = {
  'invalid-request': grpc.status.INVALID_ARGUMENT,
  denied: grpc.status.PERMISSION_DENIED,
  precondition: grpc.status.FAILED_PRECONDITION,
  unavailable: grpc.status.UNAVAILABLE,
  exhausted: grpc.status.RESOURCE_EXHAUSTED,
};

/**
 * The gRPC answer for an error thrown by domain code: a Refusal keeps its message, reason and
 * retry-after; a StatusError is already an answer; anything else is undefined (an internal error
 * whose text the handler decides whether to show).
 */
export function statusErrorOf(err: Refusal | StatusError): StatusError;
export function statusErrorOf(err: unknown): StatusError | undefined;
export function statusErrorOf(err: unknown): StatusError | undefined {
  if (err instanceof StatusError) return err;
  if (!(err instanceof Refusal)) return undefined;
  const metadata: Record<string, string> =
    err.retryAfterMs === undefined ? {} : { 'retry-after-ms': String(err.retryAfterMs) };
  return new StatusError(STATUS_OF[err.kind], err.message, metadata, err.reason);
}
