import { Refusal } from '@constellation/errors';

export interface ConcurrencyLimitOptions {
  /** Pieces of work served at once. */
  max: number;
  /** Callers that may wait for a slot at once; one more is refused (0: none wait). */
  maxWaiting?: number;
  /** The longest a caller waits for a slot before it is refused. */
  maxWaitMs?: number;
  /** The shortest retry-after given to a refused caller. */
  minRetryAfterMs: number;
  /** The longest retry-after given, however long the backlog. */
  maxRetryAfterMs: number;
  /**
   * How long a slot is taken to be held until work has completed; without it, callers refused
   * before then get the minimum retry-after and none is booked.
   */
  initialHoldMs?: number;
  /** Clock in ms; Date.now by default (tests pass their own). */
  now?: () => number;
}

/** A caller waiting for a slot: `admitted` settles with the slot's release, or with a refusal. */
export interface Waiting {
  readonly admitted: Promise<() => void>;
  /** The caller went away: leave the queue (a slot already handed over is released). */
  readonly cancel: () => void;
}

/** Weight of the newest piece of work in the average time a slot is held. */
const HOLD_AVERAGE_WEIGHT = 0.2;

interface Waiter {
  /** Whether the slot it is given holds work that completes a request (see `tryEnter`). */
  completes: boolean;
  admit: (release: () => void) => void;
  refuse: (refusal: Refusal) => void;
}

/**
 * At most `max` pieces of work at once. A few more callers wait in line (first come, first
 * served) and get a slot the moment one frees; beyond that, or after waiting too long, a caller is
 * refused as retryable, so a burst of joins turns into backoff on the nodes rather than memory and
 * latency here. The line keeps the slots busy during a storm: without it a freed slot stayed idle
 * until a refused node came back (measured with 500 nodes).
 *
 * Each refused caller is given its own time to come back: after the line ahead of it, the callers
 * already told to wait are spread over the time the backlog needs at the rate the slots can
 * serve. A fixed retry-after sent a storm's hundreds of refused nodes back together, round after
 * round. The rate is max slots / the average time a slot is held (Little's law), raised to the
 * rate recent work completed when that is faster (see `rate`). The completion rate alone is not
 * enough: when fewer callers come back than could be served, it measures them, and spreading by
 * it kept a 500-node storm waiting (measured).
 */
export class ConcurrencyLimit {
  private inFlight = 0;
  private readonly line: Waiter[] = [];
  /** Calls whose node answered its challenge, waiting to have the answer checked: served first. */
  private readonly answeredLine: Waiter[] = [];
  /** Average ms a slot is held, over recent work; undefined before any completed. */
  private holdMs: number | undefined;
  /** Callers told to come back whose time has not come yet, as of `bookedAt`. */
  private booked = 0;
  private bookedAt = 0;
  private readonly now: () => number;

  constructor(private readonly options: ConcurrencyLimitOptions) {
    this.now = options.now ?? Date.now;
  }

  /** When recent work completed (the last 2 × max), oldest first. */
  private readonly completions: number[] = [];

  /**
   * Work the slots can complete per second; undefined before any completed. From how long a slot
   * is held, or from how fast recent work actually completed when that is faster: at a storm's
   * start every slot is held long (the first calls share the CPU with hundreds of handshakes),
   * and the held-time average alone told callers to come back later than the slots needed them.
   * Half the slots' worth of completions is enough to go by: an early estimate that is too high
   * costs a second refusal, one that is too low leaves the slots idle.
   */
  private rate(): number | undefined {
    const holdMs = this.holdMs ?? this.options.initialHoldMs;
    if (holdMs === undefined) return undefined;
    const fromHold = this.options.max / (Math.max(holdMs, 1) / 1000);
    const first = this.completions[0] ?? 0;
    const elapsed = this.now() - first;
    // Up to now, not to the last completion: when work stops completing (an API server that went
    // silent holds every slot), the rate falls with the time that passes.
    const observed =
      this.completions.length >= Math.max(2, Math.ceil(this.options.max / 2)) && elapsed > 0
        ? (this.completions.length - 1) / (elapsed / 1000)
        : 0;
    return Math.max(fromHold, observed);
  }

  /** The refusal for one too many: retryable, with this caller's time to come back. */
  busy(): Refusal {
    const at = this.now();
    const rate = this.rate();
    let retryAfterMs = this.options.minRetryAfterMs;
    // Until work has completed, the rate is unknown: callers come back soon, and none is booked.
    if (rate !== undefined) {
      this.booked = Math.max(0, this.booked - (rate * (at - this.bookedAt)) / 1000);
      // Those in line get the next slots, then those told to come back: a caller sent back before
      // the line drained found it full again and was refused again, round after round (a
      // 500-node storm left the service idle for seconds at its end, measured).
      const ahead = this.line.length + this.booked;
      retryAfterMs = Math.min(this.options.maxRetryAfterMs, Math.max(retryAfterMs, Math.round((ahead / rate) * 1000)));
      // Callers told the longest wait come back then, whatever the backlog: count no more than that.
      this.booked = Math.min(this.booked + 1, (rate * this.options.maxRetryAfterMs) / 1000);
    }
    this.bookedAt = at;
    const waiting = Math.round(this.booked);
    return new Refusal(
      'exhausted',
      'busy',
      `${this.inFlight} joins are being served, ${this.line.length} are in line and about ${waiting} nodes are waiting to come back; retry in ${retryAfterMs} ms`,
      { retryAfterMs },
    );
  }

  /**
   * Takes a slot, or undefined when all are taken (or others are in line first). `completes`: the
   * hold is work that completes a request, and counts in the rate callers are told to come back by
   * (the JoinService's hello phase, which only prepares a challenge, does not).
   */
  tryEnter(completes = true): (() => void) | undefined {
    if (this.inFlight >= this.options.max || this.line.length > 0 || this.answeredLine.length > 0) return undefined;
    this.inFlight++;
    return this.slot(completes);
  }

  /**
   * A slot for a call whose node has answered its challenge: ahead of every call in line, whose
   * node has proven nothing yet, and not bounded by the line's length (the calls that can answer
   * are bounded by the challenges given out). A slot at once, or a wait with the line's bound.
   * Its hold is the work that completes a join: the rate callers are told to come back by is
   * measured on these.
   */
  enterAnswered(): (() => void) | Waiting {
    if (this.inFlight < this.options.max && this.answeredLine.length === 0) {
      this.inFlight++;
      return this.slot(true);
    }
    return this.wait(this.answeredLine, true);
  }

  /**
   * Joins the line for a slot. Throws the busy refusal when the line is full; `admitted` rejects
   * with it when no slot freed within the longest wait.
   */
  enqueue(completes = true): Waiting {
    if (this.line.length >= (this.options.maxWaiting ?? 0)) throw this.busy();
    return this.wait(this.line, completes);
  }

  /** A place at the end of `line`, refused with the busy refusal after the longest wait. */
  private wait(line: Waiter[], completes: boolean): Waiting {
    let settled = false;
    let waiter: Waiter | undefined;
    const admitted = new Promise<() => void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.leaveLine(line, waiter);
        waiter?.refuse(this.busy());
      }, this.options.maxWaitMs ?? 0);
      const settle = (): void => {
        clearTimeout(timer);
        settled = true;
      };
      waiter = {
        completes,
        admit: (release) => {
          settle();
          resolve(release);
        },
        refuse: (refusal) => {
          settle();
          reject(refusal);
        },
      };
      line.push(waiter);
    });
    return {
      admitted,
      cancel: () => {
        if (settled) return;
        this.leaveLine(line, waiter);
        // Nobody listens any more; a rejection must not go unhandled.
        admitted.catch(() => undefined);
        waiter?.refuse(new Refusal('exhausted', 'busy', 'the caller went away while waiting for a slot'));
      },
    };
  }

  private leaveLine(line: Waiter[], waiter: Waiter | undefined): void {
    const index = waiter === undefined ? -1 : line.indexOf(waiter);
    if (index >= 0) line.splice(index, 1);
  }

  /**
   * A taken slot's release: hands the slot to the first answered call waiting, else the first in
   * line, or frees it (once). `completes`: the hold is work that completes a join, and counts in
   * the rate.
   */
  private slot(completes: boolean): () => void {
    const entered = this.now();
    let freed = false;
    return () => {
      if (freed) return;
      freed = true;
      if (completes) {
        const at = this.now();
        const held = at - entered;
        this.completions.push(at);
        if (this.completions.length > 2 * this.options.max) this.completions.shift();
        this.holdMs =
          this.holdMs === undefined ? held : this.holdMs * (1 - HOLD_AVERAGE_WEIGHT) + held * HOLD_AVERAGE_WEIGHT;
      }
      const next = this.answeredLine.shift() ?? this.line.shift();
      if (next === undefined) this.inFlight--;
      else next.admit(this.slot(next.completes));
    };
  }
}
