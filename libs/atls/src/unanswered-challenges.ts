import { Refusal } from '@constellation/errors';

/** When a refused address should come back: a genuine node answers its challenge in milliseconds. */
const RETRY_AFTER_MS = 1_000;

/**
 * Calls that have not answered their challenge, per network source (`peerSource`): from the
 * moment their TPM is vouched for until their answer arrives or the call ends. A call over its
 * source's bound is refused before the service attests its host for it. A genuine node has one
 * call at a time and answers within milliseconds; a stranger replaying genuine nodes' hellos (EK
 * certificates and AKs are public) never answers. Before this bound each such hello, naming
 * another registered TPM, held a slot for the challenge's whole time bound: from one address,
 * every slot (issue 42). Since issue 50 a call waiting for its answer holds no slot at all
 * (`admitAnswer` in challenge-server.ts), which no number of addresses gets around; this bound
 * stays, on what one address makes the service prepare and remember.
 *
 * Behind a proxy or NodePort that hides source addresses every call is from one source, and the
 * bound is the service's: keep sources visible (externalTrafficPolicy: Local).
 */
export class UnansweredChallenges {
  private readonly bySource = new Map<string, number>();

  constructor(readonly maxPerSource: number) {
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
        `this address already has ${held} challenges it has not answered (at most ${this.maxPerSource}); answer them first`,
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
