import { Refusal } from '@constellation/errors';

/** When a caller whose TPM already has a call should try again: a genuine node has one call at a time. */
const PLACE_RETRY_AFTER_MS = 1_000;

/**
 * Most network sources with a call for one TPM at once. Each call of a TPM is challenged, and the
 * service's host attests for it when asked, without a slot of its own: this bounds that work per
 * TPM, and a stranger replaying a node's hello needs this many addresses to keep the node out.
 */
const MAX_SOURCES_PER_TPM = 8;

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
 * One call's place among the calls naming a TPM. The TPM's calls share one slot of the service:
 * the first admitted keeps it for all of them until the last one ends.
 */
export interface TpmPlace {
  /** Whether another call of this TPM holds a slot: this call then shares it and takes none. */
  slotHeld(): boolean;
  /** This call was admitted: `release` becomes the TPM's slot, or is freed at once if it has one. */
  adopt(release: () => void): void;
  /** This call ended: its place is free, and the TPM's slot with its last call. */
  leave(): void;
  /** The TPM's calls need no slot now (a challenge was sent): the slot goes back, the place stays. */
  yieldSlot(): void;
}

/** The calls naming one TPM: at most one per network source, and the slot they share. */
interface TpmCalls {
  bySource: Map<string, { lapsesAt: number }>;
  slot: (() => void) | undefined;
}

/**
 * The rules of a service's calls per TPM (rooted variants), shared by every call:
 *
 * - one call in line or served per TPM and network source, from before the call waits for a slot
 *   until it ends, calls from at most 8 sources per TPM, and one slot for all of a TPM's calls. Before, one call per TPM: a stranger
 *   replaying one genuine node's hello filled the whole line with it (red-team finding), and then,
 *   replaying it again each time a call ended, kept that node out as long as it went on (its hello
 *   is no secret). Now the node's own call, from its own address, goes on beside the stranger's,
 *   is challenged, and whichever call answers wins: the stranger cannot;
 * - one challenge outstanding per proven TPM (the verified EK's hash) and source: without it, the
 *   owner of one genuine node held every slot of the service with calls it never answered.
 *
 * A genuine node has no use for two calls at once: it answers a challenge within milliseconds.
 * Sources are counted by `peerSource`, so behind a proxy or a NodePort that hides them, every call
 * is from one source and the rules are those of one call per TPM again.
 */
export class OutstandingChallenges {
  /** `<EK hash> <source>` → the claim, which lapses at the latest when its challenge expires. */
  private readonly claims = new LapsingClaims();
  /** TPMs named by a hello (its EK certificate's digest) with calls in line or served. */
  private readonly tpms = new Map<string, TpmCalls>();

  /** Claims `ekPublicKeyHash` for `source` for at most `ttlMs`; returns the release, or throws a Refusal. */
  claim(ekPublicKeyHash: string, source: string, ttlMs: number, now = Date.now()): () => void {
    return this.claims.take(
      `${ekPublicKeyHash} ${source}`,
      ttlMs,
      now,
      (lapsesAt) =>
        new Refusal(
          'exhausted',
          'challenge-outstanding',
          `this TPM (EK sha256:${ekPublicKeyHash}) already has a challenge outstanding on another call from this address; one at a time`,
          { retryAfterMs: Math.max(100, lapsesAt - now) },
        ),
    );
  }

  /**
   * A place for a call from `source` naming the TPM whose EK certificate has `certificateDigest`
   * (unverified: the certificate is checked once a slot is free). The place lapses after `maxMs`
   * at the latest, should a leave be missed. Throws a Refusal when that source has a call for
   * that TPM already.
   */
  hold(certificateDigest: string, source: string, maxMs: number, now = Date.now()): TpmPlace {
    let calls = this.tpms.get(certificateDigest);
    if (calls === undefined) {
      calls = { bySource: new Map(), slot: undefined };
      this.tpms.set(certificateDigest, calls);
    }
    // A place past its lapse time means a leave was missed: it no longer counts.
    for (const [other, { lapsesAt }] of calls.bySource) if (lapsesAt <= now) calls.bySource.delete(other);
    if (!calls.bySource.has(source) && calls.bySource.size >= MAX_SOURCES_PER_TPM) {
      throw new Refusal(
        'exhausted',
        'call-in-progress',
        `this TPM (EK certificate sha256:${certificateDigest}) already has calls from ${MAX_SOURCES_PER_TPM} addresses in line or being served`,
        { retryAfterMs: PLACE_RETRY_AFTER_MS },
      );
    }
    if (calls.bySource.has(source)) {
      throw new Refusal(
        'exhausted',
        'call-in-progress',
        `this TPM (EK certificate sha256:${certificateDigest}) already has a call from this address in line or being served; one at a time`,
        { retryAfterMs: PLACE_RETRY_AFTER_MS },
      );
    }
    const entry = { lapsesAt: now + maxMs };
    calls.bySource.set(source, entry);
    const tpm = calls;
    let left = false;
    return {
      slotHeld: () => tpm.slot !== undefined,
      adopt: (release) => {
        if (left || tpm.slot !== undefined) release();
        else tpm.slot = release;
      },
      yieldSlot: () => {
        const slot = tpm.slot;
        tpm.slot = undefined;
        slot?.();
      },
      leave: () => {
        if (left) return;
        left = true;
        // A newer place of this source (this one lapsed) is not freed by the old one's leave.
        if (tpm.bySource.get(source) === entry) tpm.bySource.delete(source);
        if (tpm.bySource.size > 0) return;
        const slot = tpm.slot;
        tpm.slot = undefined;
        if (this.tpms.get(certificateDigest) === tpm) this.tpms.delete(certificateDigest);
        slot?.();
      },
    };
  }

  /** TPMs with a challenge outstanding now (per source). */
  get size(): number {
    return this.claims.size;
  }
}
