// Attacker 3 against the JoinService port: connections that never finish (or never start) their
// TLS handshake, or finish it and never call. Node's TLS server and grpc-js keep such connections
// open for ever; the service must not.
import { connect } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { MemoryLogger } from '@constellation/logger/testing';
import { withTimeout } from '@constellation/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startJoinFixture } from './join-service.fixture.js';
import type { JoinFixture, SimulatedNode } from './join-service.fixture.js';

const HANDSHAKE_TIMEOUT_MS = 500;
const CONNECTION_IDLE_MS = 1_000;
let fixture: JoinFixture;
let node: SimulatedNode;

beforeAll(async () => {
  fixture = await startJoinFixture(new MemoryLogger(), {
    handshakeTimeoutMs: HANDSHAKE_TIMEOUT_MS,
    connectionIdleMs: CONNECTION_IDLE_MS,
  });
  node = await fixture.node('worker-9', '10.42.0.9');
});

afterAll(async () => {
  await node.stop();
  await fixture.close();
});

/** A TCP connection to the service that sends `bytes` (maybe none) and then nothing; resolves when the service closes it. */
async function stalledConnection(bytes: Buffer): Promise<{ closed: Promise<number> }> {
  const opened = performance.now();
  const socket = connect(fixture.service.port, '127.0.0.1');
  const closed = new Promise<number>((resolve) => {
    socket.on('error', () => undefined);
    socket.on('close', () => {
      resolve(performance.now() - opened);
    });
  });
  await new Promise<void>((resolve) =>
    socket.once('connect', () => {
      resolve();
    }),
  );
  if (bytes.length > 0) socket.write(bytes);
  return { closed };
}

describe('JoinService against connections that stall their TLS handshake (attacker 3)', () => {
  it('closes them after the handshake timeout, while a genuine node gets its ticket meanwhile', async () => {
    // Silent connections, and ones that start a TLS record and never finish it.
    const partialRecord = Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01]);
    const stalled = await Promise.all(
      Array.from({ length: 40 }, (_, i) => stalledConnection(i % 2 === 0 ? Buffer.alloc(0) : partialRecord)),
    );
    const { ticket } = await node.requestJoin(fixture.client);
    expect(ticket.kubeletClientCert.toString()).toContain('-----BEGIN CERTIFICATE-----');
    const lifetimes = await withTimeout(
      Promise.all(stalled.map((s) => s.closed)),
      10_000,
      'the service to close stalled connections',
    );
    // Each was held about the timeout, not for ever (Node's default would be never).
    expect(Math.min(...lifetimes)).toBeGreaterThanOrEqual(HANDSHAKE_TIMEOUT_MS - 50);
    expect(Math.max(...lifetimes)).toBeLessThan(HANDSHAKE_TIMEOUT_MS + 5_000);
  });

  it('closes a connection that finished its handshake and never calls, once it has been idle a while', async () => {
    const opened = performance.now();
    const socket = tlsConnect({
      host: '127.0.0.1',
      port: fixture.service.port,
      servername: 'joinservice.constellation.internal',
      ALPNProtocols: ['h2'],
      rejectUnauthorized: false,
    });
    socket.on('error', () => undefined);
    socket.resume(); // read what the service sends (its SETTINGS, then GOAWAY), so its close is seen
    const closed = new Promise<number>((resolve) =>
      socket.on('close', () => {
        resolve(performance.now() - opened);
      }),
    );
    await withTimeout(
      new Promise<void>((resolve) =>
        socket.once('secureConnect', () => {
          resolve();
        }),
      ),
      5_000,
      'the TLS handshake',
    );
    expect(socket.alpnProtocol).toBe('h2');
    const lifetime = await withTimeout(closed, 10_000, 'the service to close the idle connection');
    expect(lifetime).toBeGreaterThanOrEqual(CONNECTION_IDLE_MS - 50);
  });
});
