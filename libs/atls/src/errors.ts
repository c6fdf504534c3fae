import * as grpc from '@grpc/grpc-js';

/** An aTLS protocol failure that is not an attestation verdict (missing extension, reused nonce, bad framing). */
export class AtlsError extends Error {
  override readonly name = 'AtlsError';
}

/**
 * The server could not attest or activate for this caller now (its TPM is busy): the same call
 * may succeed later. Carries gRPC's UNAVAILABLE and the server's retry-after, so callers that
 * retry unavailable servers retry it (a red-team pass found the CLI gave up at once).
 */
export class ServerBusyError extends AtlsError {
  readonly code = grpc.status.UNAVAILABLE;
  constructor(
    message: string,
    readonly retryAfterMs: number | undefined,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}
