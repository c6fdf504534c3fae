// The JoinService's TLS front: strangers who open connections and never finish the handshake,
// and storms that open more than the service can shake hands with at once.
import { connect as http2Connect } from 'node:http2';
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import { SERVICE_CHANNEL_OPTIONS, serviceChannelCredentials, serviceTlsIdentity } from '@constellation/atls';
import { HealthClient, HealthStatus, createGrpcServer } from '@constellation/proto';
import { withTimeout } from '@constellation/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { JOINSERVICE_DEFAULTS } from './config.js';
import { BoundedTlsListener } from './bounded-tls-listener.js';
import type { BoundedTlsListenerOptions } from './bounded-tls-listener.js';

const open: { close: () => Promise<void> }[] = [];

afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

async function serve(
  options: Partial<BoundedTlsListenerOptions>,
  acceptors = 1,
): Promise<{ port: number; shed: string[]; handshakesMs: number[]; listener: BoundedTlsListener }> {
  const server = createGrpcServer();
  new HealthStatus({ '': 'SERVING' }).addTo(server);
  const shed: string[] = [];
  const handshakesMs: number[] = [];
  const listener = new BoundedTlsListener(server, {
    ...serviceTlsIdentity(),
    maxHandshakes: 2,
    staleHandshakeMs: 60_000,
    handshakeTimeoutMs: 60_000,
    maxConnections: JOINSERVICE_DEFAULTS.maxConnections,
    onShed: (reason) => shed.push(reason),
    onHandshake: (ms) => handshakesMs.push(ms),
    ...options,
  });
  const port = await listener.listen(0, '127.0.0.1', acceptors);
  open.push({ close: () => listener.close(100) });
  return { port, shed, handshakesMs, listener };
}

/** A TCP connection that never sends a ClientHello; resolves once connected. */
async function stalledConnection(port: number): Promise<{ socket: Socket; closed: Promise<string> }> {
  const socket = connect(port, '127.0.0.1');
  const closed = new Promise<string>((resolve) => {
    socket.on('error', (err: NodeJS.ErrnoException) => {
      resolve(err.code ?? err.message);
    });
    socket.on('close', () => {
      resolve('closed');
    });
  });
  await new Promise<void>((resolve) =>
    socket.once('connect', () => {
      resolve();
    }),
  );
  open.push({
    close: () => {
      socket.destroy();
      return Promise.resolve();
    },
  });
  return { socket, closed };
}

/** A health check over the service's TLS, as a node's client makes it: a status code, 0 for OK. */
async function healthCheck(port: number): Promise<{ code: number; details: string }> {
  const client = new HealthClient(`127.0.0.1:${String(port)}`, serviceChannelCredentials(), SERVICE_CHANNEL_OPTIONS);
  try {
    return await withTimeout(
      new Promise((resolve) => {
        client.check({ service: '' }, new grpc.Metadata(), { deadline: Date.now() + 5_000 }, (err) => {
          resolve({ code: err?.code ?? grpc.status.OK, details: err?.details ?? '' });
        });
      }),
      10_000,
      'health check',
    );
  } finally {
    client.close();
  }
}

describe('BoundedTlsListener', () => {
  it('serves gRPC over TLS while handshake places are free', async () => {
    const { port, shed } = await serve({});
    expect(await healthCheck(port)).toEqual({ code: grpc.status.OK, details: '' });
    expect(await healthCheck(port)).toEqual({ code: grpc.status.OK, details: '' });
    expect(shed).toEqual([]);
  });

  it('resets a connection that finds every handshake place taken, before any TLS: the caller sees UNAVAILABLE at once', async () => {
    const { port, shed } = await serve({});
    await stalledConnection(port);
    await stalledConnection(port);
    const refused = await healthCheck(port);
    expect(refused.code).toBe(grpc.status.UNAVAILABLE);
    expect(shed).toEqual(['busy']);
  });

  it('cuts a handshake stalled past the stale bound when a newcomer needs its place: stalled strangers cannot lock nodes out', async () => {
    const { port, shed } = await serve({ staleHandshakeMs: 200 });
    const first = await stalledConnection(port);
    await stalledConnection(port);
    await new Promise((resolve) => setTimeout(resolve, 250));
    expect(await healthCheck(port)).toEqual({ code: grpc.status.OK, details: '' });
    expect(shed).toEqual(['stale']);
    expect(await withTimeout(first.closed, 5_000, 'the oldest stalled connection to be cut')).toBe('ECONNRESET');
  });

  it('drops a handshake not finished within the timeout, whatever the load', async () => {
    const { port, shed } = await serve({ maxHandshakes: 100, handshakeTimeoutMs: 300 });
    const started = Date.now();
    const stalled = await stalledConnection(port);
    await withTimeout(stalled.closed, 5_000, 'the stalled connection to be dropped');
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(shed).toEqual([]);
    expect(await healthCheck(port)).toEqual({ code: grpc.status.OK, details: '' });
  });

  it('reports each finished handshake with its time from the accept, so a ClientHello that waited counts its wait', async () => {
    const { port, handshakesMs } = await serve({});
    expect(await healthCheck(port)).toEqual({ code: grpc.status.OK, details: '' });
    expect(handshakesMs).toHaveLength(1);
    // Accepted now, its ClientHello sent 300 ms later: as a connection waits in a storm.
    const { socket } = await stalledConnection(port);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const secured = tlsConnect({ socket, rejectUnauthorized: false, servername: 'joinservice.constellation.internal' });
    await withTimeout(
      new Promise<void>((resolve, reject) => {
        secured.once('secureConnect', resolve);
        secured.once('error', reject);
      }),
      5_000,
      'the late handshake',
    );
    open.push({
      close: () => {
        secured.destroy();
        return Promise.resolve();
      },
    });
    await withTimeout(
      (async () => {
        while (handshakesMs.length < 2) await new Promise((resolve) => setTimeout(resolve, 10));
      })(),
      5_000,
      'the late handshake to be reported',
    );
    expect(handshakesMs[1]).toBeGreaterThanOrEqual(290);
  });

  it.each([1, 8])(
    "cuts connections still open when its close's grace has passed (%i listening copies)",
    async (acceptors) => {
      const { port, listener } = await serve({}, acceptors);
      // A peer whose call never sends its request: grpc-js waits for it for ever.
      const session = http2Connect(`https://127.0.0.1:${String(port)}`, {
        rejectUnauthorized: false,
        servername: 'joinservice.constellation.internal',
      });
      session.on('error', () => undefined);
      const closed = new Promise<void>((resolve) =>
        session.once('close', () => {
          resolve();
        }),
      );
      open.push({
        close: () => {
          session.destroy();
          return Promise.resolve();
        },
      });
      const call = session.request({
        ':method': 'POST',
        ':path': '/grpc.health.v1.Health/Check',
        'content-type': 'application/grpc',
        te: 'trailers',
      });
      call.on('error', () => undefined);
      await withTimeout(
        new Promise<void>((resolve) =>
          session.once('remoteSettings', () => {
            resolve();
          }),
        ),
        5_000,
        'the HTTP/2 session',
      );
      await listener.close(200);
      // With copies the TLS server itself never listens, so its close cannot be what waits for
      // its connections: the cut must come all the same, or the stopped process stays alive.
      await withTimeout(closed, 5_000, 'the connection with a call in flight to be cut by the close');
    },
  );
});
