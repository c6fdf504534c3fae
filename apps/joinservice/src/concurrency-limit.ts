import { Refusal } from '@constellation/errors';

/**
 * At most `max` pieces of work at once; one more is refused as retryable instead of queued, so a
 * burst of joins turns into backoff on the nodes rather than memory and latency here.
 */
export class ConcurrencyLimit {
  private inFlight = 0;

  constructor(
    private readonly max: number,
    private readonly retryAfterMs: number,
  ) {}

  /** The refusal for one too many: retryable, with when to come back. */
  busy(): Refusal {
    return new Refusal('exhausted', 'busy', `${this.inFlight} joins are being served; retry shortly`, {
      retryAfterMs: this.retryAfterMs,
    });
  }

  /** Takes a slot, or undefined when all are taken; the returned function frees it (once). */
  tryEnter(): (() => void) | undefined {
    if (this.inFlight >= this.max) return undefined;
    this.inFlight++;
    let freed = false;
    return () => {
      if (freed) return;
      freed = true;
      this.inFlight--;
    };
  }
}
