import { Refusal } from '@constellation/errors';
import { describe, expect, it } from 'vitest';
import { OutstandingChallenges } from './outstanding-challenges.js';

const EK = 'a'.repeat(64);

describe('OutstandingChallenges', () => {
  it('refuses a second claim for the same TPM with the time left as retry-after, and frees it on release', () => {
    const outstanding = new OutstandingChallenges();
    const release = outstanding.claim(EK, 10_000, 1_000);
    expect(outstanding.claim('b'.repeat(64), 10_000, 1_000)).toBeTypeOf('function');
    let refusal: unknown;
    try {
      outstanding.claim(EK, 10_000, 4_000);
    } catch (err) {
      refusal = err;
    }
    expect(refusal).toBeInstanceOf(Refusal);
    expect(refusal).toMatchObject({ kind: 'exhausted', reason: 'challenge-outstanding', retryAfterMs: 7_000 });
    release();
    expect(outstanding.claim(EK, 10_000, 4_000)).toBeTypeOf('function');
  });

  it('does not let a missed release block a TPM past the challenge time', () => {
    const outstanding = new OutstandingChallenges();
    outstanding.claim(EK, 10_000, 1_000); // never released
    expect(() => outstanding.claim(EK, 10_000, 10_999)).toThrow(/already has a challenge outstanding/);
    expect(outstanding.claim(EK, 10_000, 11_001)).toBeTypeOf('function');
  });

  it("an old claim's late release does not free the newer claim", () => {
    const outstanding = new OutstandingChallenges();
    const stale = outstanding.claim(EK, 10_000, 1_000);
    outstanding.claim(EK, 10_000, 12_000);
    stale();
    stale();
    expect(() => outstanding.claim(EK, 10_000, 13_000)).toThrow(/already has a challenge outstanding/);
    expect(outstanding.size).toBe(1);
  });

  it('holds one place per TPM a hello names until released, and lets a missed release lapse', () => {
    const outstanding = new OutstandingChallenges();
    const release = outstanding.hold(EK, 120_000, 1_000);
    expect(outstanding.hold('b'.repeat(64), 120_000, 1_000)).toBeTypeOf('function');
    let refusal: unknown;
    try {
      outstanding.hold(EK, 120_000, 2_000);
    } catch (err) {
      refusal = err;
    }
    expect(refusal).toBeInstanceOf(Refusal);
    expect(refusal).toMatchObject({ kind: 'exhausted', reason: 'call-in-progress', retryAfterMs: 1_000 });
    expect((refusal as Refusal).message).toMatch(/already has a call in line or being served; one at a time/);
    release();
    const stale = outstanding.hold(EK, 120_000, 3_000); // never released
    expect(() => outstanding.hold(EK, 120_000, 122_999)).toThrow(/already has a call in line/);
    outstanding.hold(EK, 120_000, 123_001);
    stale(); // the old place's late release does not free the newer one
    expect(() => outstanding.hold(EK, 120_000, 124_000)).toThrow(/already has a call in line/);
  });
});
