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

/** Weight of the newest piece of work in the average time a slot is held. */
const HOLD_AVERAGE_WEIGHT = 0.2;

/**
 * At most `max` pieces of work at once; one more is refused as retryable instead of queued, so a
 * burst of joins turns into backoff on the nodes rather than memory and latency here.
 *
 * Each refused caller is given its own time to come back: the callers already told to wait are
 * spread over the time the backlog needs at the rate the slots can serve (max slots / the average
 * time a slot is held, Little's law). A fixed retry-after sent a storm's hundreds of refused nodes
 * back together, round after round (measured with 500 nodes). The rate comes from how long work
 * takes, not from how much completed: when fewer callers come back than could be served, the
 * completion rate measures them, and spreading by it kept a 500-node storm waiting (measured).
 */
export class ConcurrencyLimit {
  private inFlight = 0;
  /** Average ms a slot is held, over recent work; undefined before any completed. */
  private holdMs: number | undefined;
  /** Callers told to come back whose time has not come yet, as of `bookedAt`. */
  private booked = 0;
  private bookedAt = 0;
  private readonly now: () => number;

  constructor(private readonly options: ConcurrencyLimitOptions) {
    this.now = options.now ?? Date.now;
  }

  /** Work the slots can complete per second; undefined before any completed. */
  private rate(): number | undefined {
    if (this.holdMs === undefined) return undefined;
    return this.options.max / (Math.max(this.holdMs, 1) / 1000);
  }

  /** The refusal for one too many: retryable, with this caller's time to come back. */
  busy(): Refusal {
    const at = this.now();
    const rate = this.rate();
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
    const entered = this.now();
    let freed = false;
    return () => {
      if (freed) return;
      freed = true;
      this.inFlight--;
      const held = this.now() - entered;
      this.holdMs =
        this.holdMs === undefined ? held : this.holdMs * (1 - HOLD_AVERAGE_WEIGHT) + held * HOLD_AVERAGE_WEIGHT;
    };
  }
}
