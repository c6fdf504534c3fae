import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JoinServiceUnavailableError, nextAttemptDelay } from './join-service-client.js';
import type { JoinServiceConnection } from './join-service-client.js';
import { startRefusingJoinService } from './refusing-joinservice.fixture.js';
import type { RefusingJoinService } from './refusing-joinservice.fixture.js';
import { errorMessage } from '@constellation/errors';

// The JoinService tells nodes when to come back (`retry-after-ms`, for example while another
// control plane holds the join lease); the node's one JoinService client must read it and wait.
let service: RefusingJoinService;
let connection: JoinServiceConnection;
/** How the fake service refuses, and the client address each call came from (its connection). */
let refusal: grpc.status = grpc.status.UNAVAILABLE;
const peers: string[] = [];

beforeAll(async () => {
  service = await startRefusingJoinService((call) => {
    peers.push(call.getPeer());
    return { code: refusal, details: 'another control-plane node is joining', retryAfterMs: '4000' };
  });
  connection = service.connection;
});

afterAll(async () => {
  await service.close();
});

describe('the JoinService client honours retry-after-ms', () => {
  it('reads the trailer from a real gRPC refusal, for join and rejoin alike', async () => {
    for (const call of [
      () => connection.join(Buffer.from('r')),
      () => connection.rejoin(Buffer.from('r'), () => Promise.resolve()),
    ]) {
      const err = await call().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(JoinServiceUnavailableError);
      expect(err).toMatchObject({ retryAfterMs: 4000, code: grpc.status.UNAVAILABLE });
      expect(errorMessage(err)).toMatch(/^127\.0\.0\.1:\d+: 14 UNAVAILABLE: another control-plane node is joining$/);
      // Early attempts back off for at most 100-200 ms; the service asked for 4 s, so the node waits that long.
      for (let attempt = 0; attempt < 3; attempt++) {
        const delay = nextAttemptDelay(attempt, err, 100, 30_000);
        expect(delay).toBeGreaterThanOrEqual(4000);
        expect(delay).toBeLessThan(4400);
      }
    }
  });

  it('follows the service when it says when to come back, instead of backing off further (gRPC retry pushback, gRFC A6)', () => {
    const trailer = new grpc.Metadata();
    trailer.set('retry-after-ms', '500');
    const busy = { code: grpc.status.RESOURCE_EXHAUSTED, metadata: trailer };
    // Attempt 6 would back off for up to 6.4 s; the service's turn for this node is in 500 ms.
    expect(nextAttemptDelay(6, busy, 100, 30_000, () => 0.999)).toBe(549);
    expect(nextAttemptDelay(6, busy, 100, 30_000, () => 0)).toBe(500);
    // A service (or an impostor) asking for no wait at all still gets a floor: no busy loop.
    trailer.set('retry-after-ms', '0');
    expect(nextAttemptDelay(0, busy, 100, 30_000, () => 0)).toBe(100);
    expect(nextAttemptDelay(2, busy, 100, 30_000, () => 0)).toBe(400);
    expect(nextAttemptDelay(6, busy, 100, 30_000, () => 0)).toBe(500);
  });

  it('comes back on the same connection after a refusal for load, and on a new one after any other failure', async () => {
    const join = (): Promise<unknown> => connection.join(Buffer.from('r')).catch((e: unknown) => e);
    try {
      refusal = grpc.status.RESOURCE_EXHAUSTED;
      peers.length = 0;
      await join();
      await join();
      await join();
      // One connection (client address and port) for the three attempts: no TLS handshake per retry.
      expect(new Set(peers).size).toBe(1);
      refusal = grpc.status.UNAVAILABLE;
      await join(); // still on the kept connection, which this failure closes
      await join();
      expect(peers[3]).toBe(peers[0]);
      expect(peers[4]).not.toBe(peers[0]);
    } finally {
      refusal = grpc.status.UNAVAILABLE;
    }
  });

  it('falls back to plain backoff without a trailer, and caps absurd requests', () => {
    expect(nextAttemptDelay(2, new Error('connection refused'), 100, 30_000, () => 0.999)).toBe(399);
    // No failure at all (a stopped attempt): plain backoff, never a throw.
    expect(nextAttemptDelay(1, undefined, 100, 30_000, () => 0.5)).toBe(100);
    const trailer = new grpc.Metadata();
    trailer.set('retry-after-ms', String(24 * 3600_000));
    const delay = nextAttemptDelay(0, { code: grpc.status.UNAVAILABLE, metadata: trailer }, 100, 30_000, () => 0);
    expect(delay).toBe(5 * 60_000);
  });
});
