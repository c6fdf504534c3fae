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

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.inFlight >= this.max) {
      throw new Refusal('exhausted', 'busy', `${this.inFlight} tickets are being issued; retry shortly`, {
        retryAfterMs: this.retryAfterMs,
      });
    }
    this.inFlight++;
    try {
      return await work();
    } finally {
      this.inFlight--;
    }
  }
}
