/**
 * What kind of "no" a refusal is. Domain code says which; the edge (a gRPC handler) turns it into
 * a status code, so the rules of a ticket or a lease do not depend on the transport.
 */
export type RefusalKind =
  /** The request itself is malformed: retrying the same request cannot help. */
  | 'invalid-request'
  /** The caller is not allowed this: retrying cannot help. */
  | 'denied'
  /** The system is not in a state that allows this yet (for example no recorded disk). */
  | 'precondition'
  /** A dependency or a competing caller is in the way; retry later. */
  | 'unavailable'
  /** The caller (or everyone) used up a budget; retry later. */
  | 'exhausted';

/**
 * A refusal by domain code: a message for the caller (never a secret), a stable `reason` label
 * for metrics and tests, and when to come back if it is worth coming back at all.
 */
export class Refusal extends Error {
  override readonly name = 'Refusal';
  readonly kind: RefusalKind;
  /** Stable label, for example "rate-limited" or "lease-held". */
  readonly reason: string;
  /** When a retry makes sense, how long to wait first. */
  readonly retryAfterMs: number | undefined;

  constructor(
    kind: RefusalKind,
    reason: string,
    message: string,
    options: { retryAfterMs?: number; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.kind = kind;
    this.reason = reason;
    this.retryAfterMs = options.retryAfterMs;
  }

  /** Whether the same request may succeed later. */
  get retryable(): boolean {
    return this.kind === 'unavailable' || this.kind === 'exhausted';
  }
}
