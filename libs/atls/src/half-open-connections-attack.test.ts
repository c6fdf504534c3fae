// Attacker 3 (a stranger without a TPM): the connection age (grpc.max_connection_age_ms +
// grace) and idle bounds are meant to free every connection a stranger holds. grpc-js ends them
// with Http2Session.close()/destroy(), and Node's http2 then only *ends* the socket (sends FIN) and
// waits for the peer to close its side, once session.close() was called. A stranger whose TCP stack
// never answers the FIN (a raw socket, or any process that simply keeps its end open) keeps the
// server's socket, TLS session and place in GrpcTlsFront's established-connection caps for ever,
// and the caps, once filled, locked everyone else out for good.
// Found by a red-team pass; GrpcTlsFront now destroys a socket 1 s after its sending side ended.
import { connect as http2Connect } from 'node:http2';
import { connect as tlsConnect } from 'node:tls';
import type * as grpc from '@grpc/grpc-js';
import { DummyIssuer } from '@constellation/attestation/testing';
import { HealthStatus, createGrpcServer } from '@constellation/proto';
import { startNeverClosingRelay } from '@constellation/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { AttestationLimits } from './attestation-limits.js';
import { AttestedTlsServer } from './attested-tls-server.js';
import type { GrpcTlsFront } from './grpc-tls-front.js';
import { stalledCall, strangerTlsOptions } from './stranger-connection.fixture.js';

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

/** The stranger's TCP stack: never answers the server's FIN (closed after the test). */
async function neverClosingRelay(serverPort: number): Promise<{ port: number }> {
  const relay = await startNeverClosingRelay(serverPort);
  cleanup.push(relay.close);
  return relay;
}

/** A finished aTLS handshake and, optionally, a Health/Watch or a request that never ends. */
async function strangerConnection(port: number, call: 'watch' | 'partial' | 'none'): Promise<void> {
  const { socket, session } = await stalledCall(
    port,
    call === 'partial' ? 'partial-request' : call === 'none' ? 'no-call' : 'watch',
  );
  socket.on('error', () => undefined);
  cleanup.push(() => {
    session.destroy();
    socket.destroy();
  });
}

/** A newcomer's health check over aTLS: 'ok' once the call answers, else why not. */
async function newcomerCheck(port: number): Promise<string> {
  return new Promise<string>((resolve) => {
    const timer = setTimeout(() => {
      resolve('timeout');
    }, 5_000);
    const socket = tlsConnect(strangerTlsOptions(port));
    socket.on('error', (err: Error) => {
      clearTimeout(timer);
      resolve(`error: ${err.message}`);
    });
    socket.once('secureConnect', () => {
      const session = http2Connect('https://node', { createConnection: () => socket });
      session.on('error', () => undefined);
      session.on('close', () => {
        clearTimeout(timer);
        resolve('closed before answering');
      });
      const stream = session.request({
        ':method': 'POST',
        ':path': '/grpc.health.v1.Health/Check',
        'content-type': 'application/grpc',
        te: 'trailers',
      });
      stream.on('error', () => undefined);
      stream.on('trailers', (trailers: Record<string, unknown>) => {
        clearTimeout(timer);
        resolve(trailers['grpc-status'] === '0' ? 'ok' : `grpc-status ${String(trailers['grpc-status'])}`);
        session.destroy();
      });
      stream.on('data', () => undefined);
      stream.end(Buffer.from([0, 0, 0, 0, 0]));
    });
  });
}

const SHORT_BOUNDS: grpc.ServerOptions = {
  'grpc.max_connection_idle_ms': 300,
  'grpc.max_connection_age_ms': 400,
  'grpc.max_connection_age_grace_ms': 400,
};

async function attestedServer(total: number): Promise<{ port: number; front: GrpcTlsFront }> {
  const server = createGrpcServer(SHORT_BOUNDS);
  new HealthStatus({ '': 'SERVING' }).addTo(server);
  const atls = new AttestedTlsServer(server, {
    issuer: new DummyIssuer(),
    limits: new AttestationLimits(),
    maxConnections: { perAddress: 100, total },
  });
  const port = await atls.listen(0, '127.0.0.1');
  cleanup.push(async () => {
    await atls.close(100);
    server.forceShutdown();
  });
  // The front is private; only to show the reason (its tracked sockets), never to act on it.
  const front = (atls as unknown as { front: GrpcTlsFront }).front;
  return { port, front };
}

const openConnections = (front: GrpcTlsFront): Promise<number> =>
  new Promise((resolve, reject) => {
    front.tls.getConnections((err, count) => {
      if (err) reject(err);
      else resolve(count);
    });
  });

describe('a stranger that never answers the server FIN (attacker 3)', () => {
  it.each([
    ['watch and stalled-request connections', 'age', ['watch', 'partial', 'watch', 'partial'] as const],
    ['idle connections (no call at all)', 'idle', ['none', 'none', 'none', 'none'] as const],
  ])(
    'has its %s freed by the %s bound, so a newcomer gets a place again',
    async (_what, _bound, kinds) => {
      const { port, front } = await attestedServer(4);
      const relay = await neverClosingRelay(port);
      for (const kind of kinds) await strangerConnection(relay.port, kind);
      expect(await openConnections(front)).toBe(4);
      // Well past idle, age (+10 % jitter) and grace: every one of them should be gone.
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      expect({
        serverSocketsStillOpen: await openConnections(front),
        newcomer: await newcomerCheck(port),
      }).toEqual({ serverSocketsStillOpen: 0, newcomer: 'ok' });
    },
    30_000,
  );
});
