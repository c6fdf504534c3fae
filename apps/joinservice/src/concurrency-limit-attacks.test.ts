import { Refusal } from '@constellation/errors';
import { describe, expect, it } from 'vitest';
import { ConcurrencyLimit } from './concurrency-limit.js';

/*
 * Join slots under any sequence of arrivals, departures, cancellations and clock jumps (attacker 3
 * controls when its calls come and go; the clock is the host's): retry-after stays within its
 * bounds, the line never grows past its size, and once everyone left every slot is free.
 */

const MIN = 500;
const MAX = 10_000;

/** A small deterministic generator, so a failing sequence can be replayed from its seed. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

function retryAfterOf(refusal: unknown): number {
  expect(refusal).toBeInstanceOf(Refusal);
  const ms = (refusal as Refusal).retryAfterMs;
  expect(ms).toBeGreaterThanOrEqual(MIN);
  expect(ms).toBeLessThanOrEqual(MAX);
  return ms ?? -1;
}

describe('ConcurrencyLimit under adversarial sequences', () => {
  for (const seed of [1, 7, 42, 1234, 99_991]) {
    it(`keeps retry-after in [${MIN}, ${MAX}] ms and frees every slot (seed ${seed})`, async () => {
      const next = random(seed);
      let clock = 1_000_000;
      const limit = new ConcurrencyLimit({
        max: 3,
        maxWaiting: 12,
        maxWaitMs: 1,
        minRetryAfterMs: MIN,
        maxRetryAfterMs: MAX,
        now: () => clock,
      });
      const releases: (() => void)[] = [];
      const waiting: { cancel: () => void }[] = [];
      const cancelled = new Set<() => void>();
      const pending: Promise<unknown>[] = [];
      for (let step = 0; step < 3_000; step++) {
        const roll = next();
        // The clock mostly moves forward, sometimes by hours, sometimes backwards (NTP steps).
        clock += roll < 0.02 ? -Math.floor(next() * 3_600_000) : roll < 0.04 ? 3_600_000 : Math.floor(next() * 50);
        const action = Math.floor(next() * 5);
        if (action === 0) {
          const release = limit.tryEnter();
          if (release !== undefined) releases.push(release);
        } else if (action === 1) {
          try {
            const w = limit.enqueue();
            waiting.push(w);
            pending.push(
              w.admitted.then(
                (release) => releases.push(release),
                // A caller that went away is told nothing it would read; the others when to come back.
                (refusal: unknown) => (cancelled.has(w.cancel) ? undefined : retryAfterOf(refusal)),
              ),
            );
          } catch (refusal) {
            retryAfterOf(refusal);
          }
        } else if (action === 2) {
          releases.splice(Math.floor(next() * releases.length), 1)[0]?.();
        } else if (action === 3) {
          const w = waiting.splice(Math.floor(next() * waiting.length), 1)[0];
          if (w !== undefined) cancelled.add(w.cancel);
          w?.cancel();
        } else {
          retryAfterOf(limit.busy());
        }
        if (step % 100 === 0) await new Promise((resolve) => setTimeout(resolve, 0));
      }
      for (const w of waiting) {
        cancelled.add(w.cancel);
        w.cancel();
      }
      await Promise.all(pending);
      // Releases handed over from the line are released too, twice for good measure (idempotent).
      while (releases.length > 0) {
        const release = releases.pop();
        release?.();
        release?.();
      }
      const slots = [limit.tryEnter(), limit.tryEnter(), limit.tryEnter()];
      expect(slots.every((slot) => slot !== undefined)).toBe(true);
      expect(limit.tryEnter()).toBeUndefined();
    });
  }

  it('bounds the line: thousands of callers beyond it are refused at once, not queued', () => {
    const limit = new ConcurrencyLimit({
      max: 2,
      maxWaiting: 8,
      maxWaitMs: 5_000,
      minRetryAfterMs: MIN,
      maxRetryAfterMs: MAX,
    });
    limit.tryEnter();
    limit.tryEnter();
    const queued = Array.from({ length: 8 }, () => limit.enqueue());
    let refused = 0;
    for (let i = 0; i < 5_000; i++) {
      try {
        limit.enqueue();
      } catch (refusal) {
        retryAfterOf(refusal);
        refused++;
      }
    }
    expect(refused).toBe(5_000);
    for (const w of queued) w.cancel();
  });
});
