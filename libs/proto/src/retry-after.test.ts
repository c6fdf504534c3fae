import { describe, expect, it } from 'vitest';
import { backoffDelay } from './retry-after.js';

describe('join retry backoff', () => {
  it('grows exponentially up to the cap, with full jitter', () => {
    expect([0, 1, 2, 3, 10].map((n) => backoffDelay(n, 100, 5_000, () => 0.999999))).toEqual([99, 199, 399, 799, 4999]);
    expect(backoffDelay(5, 100, 5_000, () => 0)).toBe(0);
    const samples = Array.from({ length: 1_000 }, () => backoffDelay(4, 100, 5_000));
    expect(Math.max(...samples)).toBeLessThan(1_600);
    expect(new Set(samples).size).toBeGreaterThan(100); // spread out: nodes do not retry in lockstep
  });

  it('never overflows for large attempt numbers', () => {
    expect(backoffDelay(10_000, 100, 30_000, () => 0.5)).toBe(15_000);
  });
});
