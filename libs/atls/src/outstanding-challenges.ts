import { Refusal } from '@constellation/errors';

/** When a caller whose TPM already has a call should try again: a genuine node has one call at a time. */
const PLACE_RETRY_AFTER_MS = 1_000;

/** Claims by key, each lapsing at the latest at its time: one holder per key at a time. */
class LapsingClaims {
  private readonly claims = new Map<string, { lapsesAt: number }>();

  /**
   * Claims `key` for at most `maxMs` and returns the release; when another claim holds it, throws
   * `refuse(lapsesAt)`. A claim past its lapse time means a release was missed: it no longer
   * counts. An old claim's late release does not free a newer one.
   */
  take(key: string, maxMs: number, now: number, refuse: (lapsesAt: number) => Refusal): () => void {
    const held = this.claims.get(key)?.lapsesAt;
    if (held !== undefined && held > now) throw refuse(held);
    const claim = { lapsesAt: now + maxMs };
    this.claims.set(key, claim);
    return () => {
      if (this.claims.get(key) === claim) this.claims.delete(key);
    };
  }

  get size(): number {
    return this.claims.size;
  }
}

/**
 * One outstanding challenge per TPM, shared by every call of a service. A call claims its TPM
 * (the verified EK's hash) once the EK check passed, and gives it back when its exchange ends,
 * however it ends. A further call for a TPM that has a challenge outstanding is refused, with the
 * time left on that challenge as its retry-after: without this rule, the owner of one genuine
 * node held every slot of the service with calls it never answered (red-team finding). A genuine
 * node has no use for two challenges at once: it answers one within milliseconds.
 */
export class OutstandingChallenges {
  /** EK hash → the claim, which lapses at the latest when its challenge expires. */
  private readonly claims = new LapsingClaims();
  /** TPMs named by a hello (its EK certificate's digest) with a call in line or served. */
  private readonly places = new LapsingClaims();

  /** Claims `ekPublicKeyHash` for at most `ttlMs`; returns the release, or throws a Refusal. */
  claim(ekPublicKeyHash: string, ttlMs: number, now = Date.now()): () => void {
    return this.claims.take(
      ekPublicKeyHash,
      ttlMs,
      now,
      (lapsesAt) =>
        new Refusal(
          'exhausted',
          'challenge-outstanding',
          `this TPM (EK sha256:${ekPublicKeyHash}) already has a challenge outstanding on another call; one at a time`,
          { retryAfterMs: Math.max(100, lapsesAt - now) },
        ),
    );
  }

  /**
   * One call per TPM a hello names, from before the call waits for a slot until it ends: the EK
   * certificate is checked only once a slot is free, and a stranger replaying one genuine node's
   * hello filled the whole line with it and turned genuine nodes away (red-team finding). The
   * claim lapses after `maxMs` at the latest, should a release be missed. Returns the release, or
   * throws a Refusal.
   */
  hold(certificateDigest: string, maxMs: number, now = Date.now()): () => void {
    return this.places.take(
      certificateDigest,
      maxMs,
      now,
      () =>
        new Refusal(
          'exhausted',
          'call-in-progress',
          `this TPM (EK certificate sha256:${certificateDigest}) already has a call in line or being served; one at a time`,
          { retryAfterMs: PLACE_RETRY_AFTER_MS },
        ),
    );
  }

  /** TPMs with a challenge outstanding now. */
  get size(): number {
    return this.claims.size;
  }
}
