import { Refusal } from '@constellation/errors';

export interface ConcurrencyLimitOptions {
  /** Pieces of work served at once. */
  max: number;
  /** The shortest retry-after given to a refused caller. */
  minRetryAfterMs: number;
  /** The longest retry-after given, however long the backlog. */
  maxRetryAfterMs: number;
  /** Clock in ms; Date.now by default (tests pass their own). */
  now?: () => number;
}

/** How far back completions count towards the service rate. */
const RATE_WINDOW_MS = 5_000;

/**
 * At most `max` pieces of work at once; one more is refused as retryable instead of queued, so a
 * burst of joins turns into backoff on the nodes rather than memory and latency here.
 *
 * Each refused caller is given its own time to come back: the callers already told to wait, at
 * the rate work has been completing, spread them over the time the backlog needs. A fixed
 * retry-after sent a storm's hundreds of refused nodes back together, round after round, and
 * each round cost a TLS handshake and a hello per node for nothing (measured with 500 nodes).
 */
export class ConcurrencyLimit {
  private inFlight = 0;
  /** Completion times within the rate window, oldest first. */
  private readonly completions: number[] = [];
  /** Callers told to come back whose time has not come yet, as of `bookedAt`. */
  private booked = 0;
  private bookedAt = 0;
  private readonly now: () => number;

  constructor(private readonly options: ConcurrencyLimitOptions) {
    this.now = options.now ?? Date.now;
  }

  /** Work completed per second over the last few seconds; undefined before any completed. */
  private rate(at: number): number | undefined {
    while (this.completions.length > 0 && (this.completions[0] ?? at) < at - RATE_WINDOW_MS) this.completions.shift();
    const first = this.completions[0];
    if (first === undefined) return undefined;
    return this.completions.length / (Math.max(at - first, 1_000) / 1000);
  }

  /** The refusal for one too many: retryable, with this caller's time to come back. */
  busy(): Refusal {
    const at = this.now();
    const rate = this.rate(at);
    let retryAfterMs = this.options.minRetryAfterMs;
    // Until work has completed, the rate is unknown: callers come back soon, and none is booked.
    if (rate !== undefined) {
      this.booked = Math.max(0, this.booked - (rate * (at - this.bookedAt)) / 1000);
      retryAfterMs = Math.min(
        this.options.maxRetryAfterMs,
        Math.max(retryAfterMs, Math.round((this.booked / rate) * 1000)),
      );
      this.booked++;
    }
    this.bookedAt = at;
    const waiting = Math.round(this.booked);
    return new Refusal(
      'exhausted',
      'busy',
      `${this.inFlight} joins are being served and about ${waiting} nodes are waiting; retry in ${retryAfterMs} ms`,
      { retryAfterMs },
    );
  }

  /** Takes a slot, or undefined when all are taken; the returned function frees it (once). */
  tryEnter(): (() => void) | undefined {
    if (this.inFlight >= this.options.max) return undefined;
    this.inFlight++;
    let freed = false;
    return () => {
      if (freed) return;
      freed = true;
      this.inFlight--;
      this.completions.push(this.now());
      if (this.completions.length > 10_000) this.completions.shift();
    };
  }
}
