import { Refusal } from '@constellation/errors';

export interface TicketBudgetOptions {
  /** Tickets one machine may get in a burst. */
  burst: number;
  /** Then one more every this many milliseconds. */
  refillMs: number;
  /** Machines tracked at most; idle (fully refilled) ones are forgotten first. */
  maxMachines?: number;
  now?: () => number;
}

interface Bucket {
  tokens: number;
  updatedAt: number;
}

/**
 * A token bucket per attested machine (EK hash, or AK name for the unrooted variant): a genuine
 * node can ask again after a failed join, but cannot make the service mint tickets without limit.
 * Over budget, the caller gets RESOURCE_EXHAUSTED with `retry-after-ms`.
 */
export class TicketBudget {
  private readonly buckets = new Map<string, Bucket>();
  private readonly options: Required<TicketBudgetOptions>;

  constructor(options: TicketBudgetOptions) {
    this.options = { maxMachines: 100_000, now: () => Date.now(), ...options };
  }

  /** Spends one ticket of `machine`'s budget, or throws the retryable refusal. */
  take(machine: string, description: string): void {
    const now = this.options.now();
    const bucket = this.refilled(machine, now);
    if (bucket.tokens < 1) {
      const retryAfterMs = Math.ceil((1 - bucket.tokens) * this.options.refillMs);
      throw new Refusal(
        'exhausted',
        'rate-limited',
        `${description} asked for more than ${this.options.burst} tickets in a row; retry in ${Math.ceil(retryAfterMs / 1000)} s`,
        { retryAfterMs },
      );
    }
    bucket.tokens -= 1;
    this.buckets.set(machine, bucket);
    if (this.buckets.size > this.options.maxMachines) this.forgetIdle(now);
  }

  /**
   * Returns a ticket taken for a request that was refused for a reason that is not the machine's
   * doing (another control plane holds the join lease): waiting in line must not use up the
   * budget, or the second of three control planes joining at once was locked out for a minute.
   */
  giveBack(machine: string): void {
    const now = this.options.now();
    const bucket = this.refilled(machine, now);
    this.buckets.set(machine, { tokens: Math.min(this.options.burst, bucket.tokens + 1), updatedAt: now });
  }

  private refilled(machine: string, now: number): Bucket {
    const bucket = this.buckets.get(machine) ?? { tokens: this.options.burst, updatedAt: now };
    const earned = (now - bucket.updatedAt) / this.options.refillMs;
    return { tokens: Math.min(this.options.burst, bucket.tokens + earned), updatedAt: now };
  }

  private forgetIdle(now: number): void {
    for (const [machine] of this.buckets) {
      if (this.refilled(machine, now).tokens >= this.options.burst) this.buckets.delete(machine);
    }
    // Still too many (a flood of distinct genuine machines): drop the oldest.
    for (const [machine] of this.buckets) {
      if (this.buckets.size <= this.options.maxMachines) break;
      this.buckets.delete(machine);
    }
  }
}
