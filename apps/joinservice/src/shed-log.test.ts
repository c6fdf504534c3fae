import { Refusal } from '@constellation/errors';
import { MemoryLogger } from '@constellation/logger/testing';
import { describe, expect, it } from 'vitest';
import { ShedLog } from './shed-log.js';

const busy = (retryAfterMs: number): Refusal =>
  new Refusal('exhausted', 'busy', `16 joins are being served; retry in ${retryAfterMs} ms`, { retryAfterMs });

const SUMMARY_MS = 100;

/** Resolves once `logger` holds `count` entries, or fails after 2 s. */
async function entries(logger: MemoryLogger, count: number): Promise<void> {
  const deadline = Date.now() + 2_000;
  while (logger.entries.length < count) {
    if (Date.now() > deadline) throw new Error(`expected ${count} log entries, got ${logger.entries.length}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('the log of calls shed for load', () => {
  it('says at once that shedding began, then sums up the calls shed in each period', async () => {
    const logger = new MemoryLogger();
    const log = new ShedLog(logger, SUMMARY_MS);
    log.shed(busy(500));
    expect(logger.entries).toEqual([
      {
        level: 'info',
        message: 'shedding calls for load',
        fields: { refusal: '16 joins are being served; retry in 500 ms', retryAfterMs: 500 },
      },
    ]);
    for (const ms of [700, 3_000, 1_200]) log.shed(busy(ms));
    expect(logger.entries).toHaveLength(1); // no line per call
    await entries(logger, 2);
    const summary = logger.entries[1];
    expect(summary?.message).toBe('shed calls for load');
    expect(summary?.fields).toMatchObject({
      calls: 3,
      retryAfterMs: { shortest: 700, longest: 3_000 },
      lastRefusal: '16 joins are being served; retry in 1200 ms',
    });
    expect(summary?.fields['sinceMs']).toBeGreaterThanOrEqual(SUMMARY_MS - 5);
  });

  it('ends the episode after a quiet period: the next call shed is said at once again', async () => {
    const logger = new MemoryLogger();
    const log = new ShedLog(logger, SUMMARY_MS);
    log.shed(busy(500));
    // A period without any shed call, and the next period's end: nothing to sum up.
    await new Promise((resolve) => setTimeout(resolve, 2.5 * SUMMARY_MS));
    expect(logger.entries).toHaveLength(1);
    log.shed(busy(800));
    expect(logger.entries.map((e) => e.message)).toEqual(['shedding calls for load', 'shedding calls for load']);
    log.flush();
  });

  it('sums up what is pending when the service shuts down', () => {
    const logger = new MemoryLogger();
    const log = new ShedLog(logger, 60_000);
    log.shed(busy(500));
    log.shed(new Error('another refusal without a retry-after'));
    log.flush();
    expect(logger.entries.map((e) => e.message)).toEqual(['shedding calls for load', 'shed calls for load']);
    expect(logger.entries[1]?.fields).toMatchObject({ calls: 1, lastRefusal: 'another refusal without a retry-after' });
    expect(logger.entries[1]?.fields['retryAfterMs']).toBeUndefined();
    log.flush(); // nothing more to say, and no timer left behind
    expect(logger.entries).toHaveLength(2);
  });
});
