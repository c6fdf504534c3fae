import type * as grpc from '@grpc/grpc-js';
import { DummyIssuer } from '@constellation/attestation/testing';
import { HealthStatus, createGrpcServer } from '@constellation/proto';
import { describe, expect, it } from 'vitest';
import type { EstablishedLimit } from './established-connections.js';
import { AttestationLimits } from './attestation-limits.js';
import { AttestedTlsServer } from './attested-tls-server.js';
import { stalledCall } from './stranger-connection.fixture.js';
import type { Stalled } from './stranger-connection.fixture.js';

/*
 * Attacker 3 (a stranger, no TPM), found by a red-team pass: the aTLS server closes connections
 * whose handshake stalls (handshakeTimeoutMs) and the gRPC server closes connections without
 * calls (grpc.max_connection_idle_ms). Neither covers a connection that finished its handshake
 * and keeps one call open: grpc-js counts the call as activity, waits for a unary request's
 * message without any time limit, and keeps a server stream (Health/Watch on the verify endpoint)
 * open for as long as the client wants. Each such connection costs one attestation and then holds
 * a socket, a TLS session and an HTTP/2 session for ever. How many one address and all callers
 * keep is bounded, and every factory server closes a connection past its age and grace
 * (grpc.max_connection_age_ms, 10 + 10 min by default).
 */

async function openStalled(
  maxConnections: EstablishedLimit,
  count: number,
  options: grpc.ServerOptions = {},
  waitMs = 1_000,
): Promise<number> {
  const server = createGrpcServer(options);
  new HealthStatus({ '': 'SERVING' }).addTo(server);
  const atls = new AttestedTlsServer(server, {
    issuer: new DummyIssuer(),
    limits: new AttestationLimits(),
    maxConnections,
  });
  const port = await atls.listen(0, '127.0.0.1');
  const stalled: Stalled[] = [];
  try {
    for (let i = 0; i < count; i++) {
      // One beyond the bound already at accept is cut before its handshake: it holds nothing.
      const call = await stalledCall(port, i % 2 === 0 ? 'partial-request' : 'watch').catch(() => undefined);
      if (call !== undefined) stalled.push(call);
    }
    // Others may be closed once their handshake is done: give the closes time to arrive.
    await new Promise((resolve) => setTimeout(resolve, waitMs));
    return stalled.filter((s) => !s.socket.destroyed && s.socket.readyState === 'open').length;
  } finally {
    for (const s of stalled) {
      s.session.destroy();
      s.socket.destroy();
    }
    await atls.close(100);
    server.forceShutdown();
  }
}

describe('connections with a call that never ends (attacker 3)', () => {
  it('one address keeps at most its share of them', async () => {
    expect(await openStalled({ perAddress: 3, total: 100 }, 10)).toBe(3);
  }, 30_000);

  it('all callers together keep at most the total', async () => {
    expect(await openStalled({ perAddress: 100, total: 4 }, 10)).toBe(4);
  }, 30_000);

  it('each is closed once its connection is past its age and grace, the call cut', async () => {
    // Within the caps, with the age bounds shortened (10 + 10 min by default): all four stay open
    // without them (the caps above), and none is left after age (+10 % jitter) and grace.
    const age = { 'grpc.max_connection_age_ms': 400, 'grpc.max_connection_age_grace_ms': 400 };
    expect(await openStalled({ perAddress: 10, total: 10 }, 4, age, 2_000)).toBe(0);
  }, 30_000);
});
