import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nextAttemptDelay } from './join-service-client.js';
import type { JoinServiceConnection } from './join-service-client.js';
import { startRefusingJoinService } from './refusing-joinservice.fixture.js';
import type { RefusingJoinService } from './refusing-joinservice.fixture.js';

/*
 * A fake JoinService (attacker 1: network access, no TPM) that refuses every call for load and
 * names its own retry-after: the node follows a service's schedule, so the schedule must not let
 * a fake service make it spin, or keep it away for longer than the cap.
 */

let service: RefusingJoinService;
let connection: JoinServiceConnection;
let retryAfterMs = '0';
let calls = 0;

beforeAll(async () => {
  service = await startRefusingJoinService(() => {
    calls++;
    return { code: grpc.status.RESOURCE_EXHAUSTED, details: 'busy forever', retryAfterMs };
  });
  connection = service.connection;
});

afterAll(async () => {
  await service.close();
});

/** The node's retry loop as join-client runs it, for `ms`: attempt, wait what the schedule says. */
async function retryFor(ms: number): Promise<number[]> {
  const delays: number[] = [];
  const until = Date.now() + ms;
  for (let attempt = 0; Date.now() < until; attempt++) {
    const failure = await connection.join(Buffer.from('r')).catch((err: unknown) => err);
    const delay = nextAttemptDelay(attempt, failure, 100, 30_000);
    delays.push(delay);
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
  return delays;
}

describe('a fake JoinService refusing for load forever', () => {
  it('with retry-after 0 cannot make the node spin: the floor doubles to 500 ms, two attempts a second', async () => {
    retryAfterMs = '0';
    calls = 0;
    const delays = await retryFor(2_000);
    delays.forEach((delay, attempt) => {
      expect(delay).toBeGreaterThanOrEqual(Math.min(100 * 2 ** attempt, 500));
    });
    // 0, 0.1, 0.3, 0.7, 1.2, 1.7 s: six attempts in two seconds, then two a second.
    expect(calls).toBeLessThanOrEqual(7);
    expect(calls).toBeGreaterThanOrEqual(3);
  });

  it('with absurd retry-after values is capped at 5 minutes or ignored, never obeyed beyond the cap', async () => {
    for (const [asked, max] of [
      ['1e12', 5 * 60_000 + 1_000],
      ['Infinity', 30_000],
      ['-5', 30_000],
      ['NaN', 30_000],
      ['0x7fffffff', 5 * 60_000 + 1_000],
    ] as const) {
      retryAfterMs = asked;
      const failure = await connection.join(Buffer.from('r')).catch((err: unknown) => err);
      for (let attempt = 0; attempt < 40; attempt++) {
        const delay = nextAttemptDelay(attempt, failure, 100, 30_000);
        expect(delay, `retry-after-ms ${asked}, attempt ${attempt}`).toBeGreaterThanOrEqual(0);
        expect(delay, `retry-after-ms ${asked}, attempt ${attempt}`).toBeLessThanOrEqual(max);
      }
    }
  });
});
