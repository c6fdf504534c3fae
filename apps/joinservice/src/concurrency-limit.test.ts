import { describe, expect, it } from 'vitest';
import { ConcurrencyLimit } from './concurrency-limit.js';

function limitWithClock(max: number): { limit: ConcurrencyLimit; clock: { ms: number } } {
  const clock = { ms: 1_000_000 };
  return {
    limit: new ConcurrencyLimit({ max, minRetryAfterMs: 500, maxRetryAfterMs: 30_000, now: () => clock.ms }),
    clock,
  };
}

describe('ConcurrencyLimit', () => {
  it('serves at most max at once and frees a slot once', () => {
    const { limit } = limitWithClock(2);
    const a = limit.tryEnter();
    const b = limit.tryEnter();
    expect(a).toBeDefined();
    expect(b).toBeDefined();
    expect(limit.tryEnter()).toBeUndefined();
    a?.();
    a?.();
    expect(limit.tryEnter()).toBeDefined();
    expect(limit.tryEnter()).toBeUndefined();
  });

  it('gives the minimum retry-after before it knows how fast work completes', () => {
    const { limit } = limitWithClock(1);
    limit.tryEnter();
    const refusal = limit.busy();
    expect(refusal.retryable).toBe(true);
    expect(refusal.reason).toBe('busy');
    expect(refusal.retryAfterMs).toBe(500);
  });

  it('spreads a storm of refused callers over the time the backlog needs, instead of one retry-after for all', () => {
    const { limit, clock } = limitWithClock(1);
    // 20 pieces of work completed in the last 2 s: 10 per second.
    for (let i = 0; i < 20; i++) {
      limit.tryEnter()?.();
      clock.ms += 100;
    }
    limit.tryEnter();
    const waits = Array.from({ length: 100 }, () => limit.busy().retryAfterMs ?? 0);
    // The n-th refused caller comes back after about n / 10 s, never sooner than the minimum.
    expect(waits[0]).toBe(500);
    expect(waits[50]).toBe(5_000);
    expect(waits[99]).toBe(9_900);
    expect(new Set(waits).size).toBeGreaterThan(90);
    expect(limit.busy().message).toMatch(/1 joins are being served and about 101 nodes are waiting; retry in 10000 ms/);
  });

  it('forgets waiting callers as their time passes, and caps the wait', () => {
    const { limit, clock } = limitWithClock(1);
    for (let i = 0; i < 10; i++) {
      limit.tryEnter()?.();
      clock.ms += 100;
    }
    limit.tryEnter();
    for (let i = 0; i < 1_000; i++) limit.busy();
    expect(limit.busy().retryAfterMs).toBe(30_000);
    // Work keeps completing at 10/s; after 100 s the callers told to wait have all had their turn.
    for (let i = 0; i < 1_000; i++) {
      clock.ms += 100;
      limit.tryEnter()?.();
    }
    expect(limit.busy().retryAfterMs).toBe(500);
  });
});
