import * as grpc from '@grpc/grpc-js';

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
