import { Refusal } from '@constellation/errors';

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
  private readonly claims = new Map<string, { lapsesAt: number }>();

  /** Claims `ekPublicKeyHash` for at most `ttlMs`; returns the release, or throws a Refusal. */
  claim(ekPublicKeyHash: string, ttlMs: number, now = Date.now()): () => void {
    const held = this.claims.get(ekPublicKeyHash)?.lapsesAt;
    // A claim past its lapse time means a release was missed: it no longer counts.
    if (held !== undefined && held > now) {
      throw new Refusal(
        'exhausted',
        'challenge-outstanding',
        `this TPM (EK sha256:${ekPublicKeyHash}) already has a challenge outstanding on another call; one at a time`,
        { retryAfterMs: Math.max(100, held - now) },
      );
    }
    const claim = { lapsesAt: now + ttlMs };
    this.claims.set(ekPublicKeyHash, claim);
    return () => {
      if (this.claims.get(ekPublicKeyHash) === claim) this.claims.delete(ekPublicKeyHash);
    };
  }

  /** TPMs with a challenge outstanding now. */
  get size(): number {
    return this.claims.size;
  }
}
