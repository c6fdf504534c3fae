import { Refusal } from '@constellation/errors';
import { describe, expect, it } from 'vitest';
import { OutstandingChallenges } from './outstanding-challenges.js';

const EK = 'a'.repeat(64);
const HERE = '127.0.0.1';
const THERE = '127.0.0.2';

describe('OutstandingChallenges', () => {
  it('refuses a second claim for the same TPM with the time left as retry-after, and frees it on release', () => {
    const outstanding = new OutstandingChallenges();
    const release = outstanding.claim(EK, HERE, 10_000, 1_000);
    expect(outstanding.claim('b'.repeat(64), HERE, 10_000, 1_000)).toBeTypeOf('function');
    let refusal: unknown;
    try {
      outstanding.claim(EK, HERE, 10_000, 4_000);
    } catch (err) {
      refusal = err;
    }
    expect(refusal).toBeInstanceOf(Refusal);
    expect(refusal).toMatchObject({ kind: 'exhausted', reason: 'challenge-outstanding', retryAfterMs: 7_000 });
    release();
    expect(outstanding.claim(EK, HERE, 10_000, 4_000)).toBeTypeOf('function');
  });

  it('does not let a missed release block a TPM past the challenge time', () => {
    const outstanding = new OutstandingChallenges();
    outstanding.claim(EK, HERE, 10_000, 1_000); // never released
    expect(() => outstanding.claim(EK, HERE, 10_000, 10_999)).toThrow(/already has a challenge outstanding/);
    expect(outstanding.claim(EK, HERE, 10_000, 11_001)).toBeTypeOf('function');
  });

  it("an old claim's late release does not free the newer claim", () => {
    const outstanding = new OutstandingChallenges();
    const stale = outstanding.claim(EK, HERE, 10_000, 1_000);
    outstanding.claim(EK, HERE, 10_000, 12_000);
    stale();
    stale();
    expect(() => outstanding.claim(EK, HERE, 10_000, 13_000)).toThrow(/already has a challenge outstanding/);
    expect(outstanding.size).toBe(1);
  });

  it('lets each network source have its own challenge for a TPM', () => {
    const outstanding = new OutstandingChallenges();
    outstanding.claim(EK, HERE, 10_000, 1_000);
    expect(outstanding.claim(EK, THERE, 10_000, 1_000)).toBeTypeOf('function');
    expect(() => outstanding.claim(EK, THERE, 10_000, 2_000)).toThrow(
      /already has a challenge outstanding on another call from this address; one at a time/,
    );
  });

  it('holds one place per TPM a hello names and source until left, and lets a missed leave lapse', () => {
    const outstanding = new OutstandingChallenges();
    const place = outstanding.hold(EK, HERE, 120_000, 1_000);
    outstanding.hold('b'.repeat(64), HERE, 120_000, 1_000);
    let refusal: unknown;
    try {
      outstanding.hold(EK, HERE, 120_000, 2_000);
    } catch (err) {
      refusal = err;
    }
    expect(refusal).toBeInstanceOf(Refusal);
    expect(refusal).toMatchObject({ kind: 'exhausted', reason: 'call-in-progress', retryAfterMs: 1_000 });
    expect((refusal as Refusal).message).toMatch(
      /already has a call from this address in line or being served; one at a time/,
    );
    // Another source's call for the same TPM is not held up by this one.
    outstanding.hold(EK, THERE, 120_000, 2_000).leave();
    place.leave();
    const stale = outstanding.hold(EK, HERE, 120_000, 3_000); // never left
    expect(() => outstanding.hold(EK, HERE, 120_000, 122_999)).toThrow(/already has a call from this address/);
    outstanding.hold(EK, HERE, 120_000, 123_001);
    stale.leave(); // the old place's late leave does not free the newer one
    expect(() => outstanding.hold(EK, HERE, 120_000, 124_000)).toThrow(/already has a call from this address/);
  });

  it('takes calls for one TPM from at most 8 sources at once', () => {
    const outstanding = new OutstandingChallenges();
    const places = Array.from({ length: 8 }, (_, i) => outstanding.hold(EK, `10.0.0.${String(i)}`, 120_000, 1_000));
    expect(() => outstanding.hold(EK, '10.0.0.8', 120_000, 1_000)).toThrow(
      /already has calls from 8 addresses in line or being served/,
    );
    outstanding.hold('b'.repeat(64), '10.0.0.8', 120_000, 1_000);
    places[0]?.leave();
    outstanding.hold(EK, '10.0.0.8', 120_000, 1_000);
  });

  it("shares one slot among a TPM's calls, freed with the last of them", () => {
    const outstanding = new OutstandingChallenges();
    const freed: string[] = [];
    const first = outstanding.hold(EK, HERE, 120_000, 1_000);
    const second = outstanding.hold(EK, THERE, 120_000, 1_000);
    expect(first.slotHeld()).toBe(false);
    first.adopt(() => freed.push('first'));
    expect(second.slotHeld()).toBe(true);
    // A call admitted to a slot of its own while another got one meanwhile gives its own back.
    second.adopt(() => freed.push('second'));
    expect(freed).toEqual(['second']);
    first.leave();
    expect(freed).toEqual(['second']);
    const third = outstanding.hold(EK, '127.0.0.3', 120_000, 1_000);
    expect(third.slotHeld()).toBe(true);
    second.leave();
    third.leave();
    third.leave();
    expect(freed).toEqual(['second', 'first']);
    // The next call of that TPM starts afresh, and one admitted after it left frees its slot.
    const late = outstanding.hold(EK, HERE, 120_000, 2_000);
    expect(late.slotHeld()).toBe(false);
    late.leave();
    late.adopt(() => freed.push('late'));
    expect(freed).toEqual(['second', 'first', 'late']);
  });
});
