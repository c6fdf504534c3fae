import { Refusal } from '@constellation/errors';

/** When a refused address should come back: a genuine node answers its challenge in milliseconds. */
const RETRY_AFTER_MS = 1_000;

/**
 * The service's slots held by calls that have not answered their challenge, per network source
 * (`peerSource`): from the moment a call is given a slot until its answer arrives or the call
 * ends. A call given a slot while its source is at the bound gives the slot back and is refused. A genuine node has one call at a time and answers within
 * milliseconds; a stranger replaying genuine nodes' hellos (EK certificates and AKs are public)
 * never answers, and before this bound each such hello, naming another registered TPM, held a
 * slot for the challenge's whole time bound: from one address, every slot (issue 42).
 *
 * Behind a proxy or NodePort that hides source addresses every call is from one source, and the
 * bound is the service's: keep sources visible (externalTrafficPolicy: Local).
 */
export class UnansweredChallenges {
  private readonly bySource = new Map<string, number>();

  /** `maxPerSource` of `slots`: the message names both. */
  constructor(
    readonly maxPerSource: number,
    private readonly slots: number,
  ) {
    if (!Number.isInteger(maxPerSource) || maxPerSource < 1)
      throw new RangeError(`unanswered challenges per source must be a positive integer, got ${maxPerSource}`);
  }

  /**
   * Counts one more unanswered call for `source` and returns its release (idempotent), or throws a
   * Refusal when the source is at its bound.
   */
  take(source: string): () => void {
    const held = this.bySource.get(source) ?? 0;
    if (held >= this.maxPerSource) {
      throw new Refusal(
        'exhausted',
        'unanswered-challenges',
        `this address already holds ${held} join slots with challenges it has not answered (at most ${this.maxPerSource} of the ${this.slots}); answer them first`,
        { retryAfterMs: RETRY_AFTER_MS },
      );
    }
    this.bySource.set(source, held + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const now = (this.bySource.get(source) ?? 1) - 1;
      if (now <= 0) this.bySource.delete(source);
      else this.bySource.set(source, now);
    };
  }

  /** Unanswered calls `source` holds now. */
  held(source: string): number {
    return this.bySource.get(source) ?? 0;
  }
}
