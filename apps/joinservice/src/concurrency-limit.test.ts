import { describe, expect, it } from 'vitest';
import { ConcurrencyLimit } from './concurrency-limit.js';
import type { ConcurrencyLimitOptions } from './concurrency-limit.js';

function limitWithClock(
  max: number,
  options: Partial<ConcurrencyLimitOptions> = {},
): { limit: ConcurrencyLimit; clock: { ms: number } } {
  const clock = { ms: 1_000_000 };
  return {
    limit: new ConcurrencyLimit({
      max,
      minRetryAfterMs: 500,
      maxRetryAfterMs: 30_000,
      now: () => clock.ms,
      ...options,
    }),
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

  it('spreads the callers refused before any work completed by the assumed hold time', () => {
    // A storm's first refusals come before any join completed: with no rate to go by, all of them
    // came back after the minimum together, round after round, until the first completions.
    const { limit } = limitWithClock(4, { initialHoldMs: 400 });
    for (let i = 0; i < 4; i++) limit.tryEnter();
    // 4 slots held 400 ms each: 10 per second until completions say otherwise.
    const waits = Array.from({ length: 40 }, () => limit.busy().retryAfterMs ?? 0);
    expect(waits[0]).toBe(500);
    expect(waits[20]).toBe(2_000);
    expect(waits[39]).toBe(3_900);
  });

  it('spreads a storm of refused callers over the time the backlog needs, instead of one retry-after for all', () => {
    const { limit, clock } = limitWithClock(1);
    // Work holds the one slot for 100 ms: 10 per second.
    for (let i = 0; i < 20; i++) {
      const leave = limit.tryEnter();
      clock.ms += 100;
      leave?.();
    }
    limit.tryEnter();
    const waits = Array.from({ length: 100 }, () => limit.busy().retryAfterMs ?? 0);
    // The n-th refused caller comes back after about n / 10 s, never sooner than the minimum.
    expect(waits[0]).toBe(500);
    expect(waits[50]).toBe(5_000);
    expect(waits[99]).toBe(9_900);
    expect(new Set(waits).size).toBeGreaterThan(90);
    expect(limit.busy().message).toMatch(
      /1 joins are being served, 0 are in line and about 101 nodes are waiting to come back; retry in 10000 ms/,
    );
  });

  it('forgets waiting callers as their time passes, and caps the wait', () => {
    const { limit, clock } = limitWithClock(1);
    const hold = (): void => {
      const leave = limit.tryEnter();
      clock.ms += 100;
      leave?.();
    };
    for (let i = 0; i < 10; i++) hold();
    limit.tryEnter();
    for (let i = 0; i < 1_000; i++) limit.busy();
    expect(limit.busy().retryAfterMs).toBe(30_000);
    // The slot keeps serving at 10/s; after 100 s the callers told to wait have all had their turn.
    clock.ms += 100_000;
    expect(limit.busy().retryAfterMs).toBe(500);
  });

  it('goes by how fast work completes when slots were held long at a storm start', () => {
    const { limit, clock } = limitWithClock(4);
    // The first four calls shared the CPU with a storm's handshakes: each held its slot 4 s.
    const first = [limit.tryEnter(), limit.tryEnter(), limit.tryEnter(), limit.tryEnter()];
    clock.ms += 4_000;
    for (const leave of first) leave?.();
    // Then work completes every 50 ms: 20 per second, where the held-time average says 1.
    for (let i = 0; i < 4; i++) {
      const leave = limit.tryEnter();
      clock.ms += 50;
      leave?.();
    }
    const held = [limit.tryEnter(), limit.tryEnter(), limit.tryEnter(), limit.tryEnter()];
    for (let i = 0; i < 19; i++) limit.busy();
    // The 20th waiting caller comes back after about 1 s, not after 20 s (capped at 30 s).
    expect(limit.busy().retryAfterMs).toBeLessThan(1_500);
    // Then nothing completes for 10 s (an API server gone silent holds every slot): the fast
    // completions of before no longer say how soon callers will be served.
    clock.ms += 10_000;
    const later = Array.from({ length: 20 }, () => limit.busy().retryAfterMs ?? 0);
    expect(later[19]).toBeGreaterThan(5_000);
    for (const leave of held) leave?.();
  });

  it('serves faster callers sooner: the rate follows how long work takes now', () => {
    const { limit, clock } = limitWithClock(2);
    const hold = (ms: number): void => {
      const leave = limit.tryEnter();
      clock.ms += ms;
      leave?.();
    };
    for (let i = 0; i < 20; i++) hold(1_000);
    const a = limit.tryEnter();
    const b = limit.tryEnter();
    for (let i = 0; i < 10; i++) limit.busy();
    // 2 slots at 1 s each: 2/s, so the 11th waiting caller comes back after about 5 s.
    expect(limit.busy().retryAfterMs).toBe(5_000);
    a?.();
    b?.();
    clock.ms += 5_500;
    for (let i = 0; i < 20; i++) hold(100);
    const c = limit.tryEnter();
    const d = limit.tryEnter();
    for (let i = 0; i < 10; i++) limit.busy();
    // Work now takes about 100 ms: 20/s, so the 11th waiting caller comes back after about 0.5 s.
    expect(limit.busy().retryAfterMs).toBeLessThan(700);
    c?.();
    d?.();
  });
});

describe('ConcurrencyLimit line', () => {
  const limit = (maxWaitMs = 10_000): ConcurrencyLimit =>
    new ConcurrencyLimit({ max: 1, maxWaiting: 2, maxWaitMs, minRetryAfterMs: 500, maxRetryAfterMs: 30_000 });

  it('hands a freed slot to the first caller in line, and lets nobody pass the line', async () => {
    const l = limit();
    const a = l.tryEnter();
    const b = l.enqueue();
    const c = l.enqueue();
    // The line is full: one more is told to come back, saying why.
    expect(() => l.enqueue()).toThrow(/1 joins are being served, 2 are in line/);
    a?.();
    const releaseB = await b.admitted;
    // A slot freed while others wait goes to the line, not to a newcomer.
    expect(l.tryEnter()).toBeUndefined();
    releaseB();
    const releaseC = await c.admitted;
    releaseC();
    expect(l.tryEnter()).toBeDefined();
  });

  it('sends a refused caller back after the line ahead of it has had its slots', async () => {
    const clock = { ms: 1_000_000 };
    const l = new ConcurrencyLimit({
      max: 1,
      maxWaiting: 20,
      maxWaitMs: 60_000,
      minRetryAfterMs: 500,
      maxRetryAfterMs: 30_000,
      now: () => clock.ms,
    });
    // Work holds the one slot for 100 ms: 10 per second.
    for (let i = 0; i < 20; i++) {
      const leave = l.tryEnter();
      clock.ms += 100;
      leave?.();
    }
    const held = l.tryEnter();
    const line = Array.from({ length: 20 }, () => l.enqueue());
    // 20 in line take 2 s of slots: the first caller refused comes back then, not at the minimum.
    let refused: unknown;
    try {
      l.enqueue();
    } catch (err) {
      refused = err;
    }
    expect(refused).toMatchObject({ reason: 'busy', retryAfterMs: 2_000 });
    expect(l.busy().retryAfterMs).toBe(2_100); // and the next after it
    held?.();
    for (const waiting of line) (await waiting.admitted)();
  });

  it('refuses a caller that waited too long, as retryable', async () => {
    const l = limit(30);
    l.tryEnter();
    await expect(l.enqueue().admitted).rejects.toMatchObject({ reason: 'busy', retryable: true, retryAfterMs: 500 });
    // It left the line: the next caller is first.
    const next = l.enqueue();
    next.cancel();
    await expect(next.admitted).rejects.toThrow(/went away/);
  });

  it('forgets a caller that went away, so the slot goes to the next one', async () => {
    const l = limit();
    const a = l.tryEnter();
    const gone = l.enqueue();
    const next = l.enqueue();
    gone.cancel();
    a?.();
    const release = await next.admitted;
    release();
    expect(l.tryEnter()).toBeDefined();
  });

  it('serves an answered call ahead of the line, whatever the line holds', async () => {
    const { limit } = limitWithClock(1, { maxWaiting: 1, maxWaitMs: 5_000 });
    const held = limit.tryEnter(false);
    const inLine = limit.enqueue(false);
    const answered = limit.enterAnswered();
    expect(typeof answered).toBe('object');
    const order: string[] = [];
    void inLine.admitted.then((release) => {
      order.push('line');
      release();
    });
    void (answered as { admitted: Promise<() => void> }).admitted.then((release) => {
      order.push('answered');
      release();
    });
    held?.();
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual(['answered', 'line']);
    // A slot is free again, and an answered call takes it at once.
    expect(typeof limit.enterAnswered()).toBe('function');
  });

  it('measures the rate on holds that complete work, not on preparing a challenge', () => {
    const { limit, clock } = limitWithClock(1, { initialHoldMs: 1_000 });
    // Ten challenges prepared in 1 ms each: counted, they would say 1,000 joins a second.
    for (let i = 0; i < 10; i++) {
      const release = limit.tryEnter(false);
      clock.ms += 1;
      release?.();
    }
    limit.tryEnter(false);
    // Still the assumed 1 s per join: the tenth caller told to come back is sent 9 s out.
    const waits = Array.from({ length: 10 }, () => limit.busy().retryAfterMs ?? 0);
    expect(waits[9]).toBe(9_000);
  });
});
