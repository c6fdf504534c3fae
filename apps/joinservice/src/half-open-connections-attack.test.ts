// Attacker 3 (a stranger): the JoinService's TLS front (BoundedTlsListener over
// GrpcTlsFront) bounds handshakes, and grpc-js's idle and age bounds are meant to free finished
// connections. grpc-js closes an idle connection with Http2Session.close(); Node's http2 then ends
// the socket (FIN) and waits for the peer's FIN before the socket closes. A stranger that never
// sends its FIN kept every such socket (descriptor, TLS session) for ever, and the JoinService has
// no cap on finished connections at all: they added up without bound.
// Found by a red-team pass; GrpcTlsFront now destroys a socket 1 s after its sending side ended.
import { connect as http2Connect } from 'node:http2';
import { connect as tlsConnect } from 'node:tls';
import type { TLSSocket } from 'node:tls';
import type { GrpcTlsFront } from '@constellation/atls';
import { serviceTlsIdentity } from '@constellation/atls';
import { HealthStatus, createGrpcServer } from '@constellation/proto';
import { startNeverClosingRelay } from '@constellation/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { JOINSERVICE_DEFAULTS } from './config.js';
import { BoundedTlsListener } from './bounded-tls-listener.js';

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

/** The stranger's TCP stack: never answers the server's FIN (closed after the test). */
async function neverClosingRelay(serverPort: number): Promise<number> {
  const relay = await startNeverClosingRelay(serverPort);
  cleanup.push(relay.close);
  return relay.port;
}

/** Finishes the TLS handshake and the HTTP/2 preface, then makes no call. */
async function idleStranger(port: number): Promise<void> {
  const socket = await new Promise<TLSSocket>((resolve, reject) => {
    const s = tlsConnect({ host: '127.0.0.1', port, ALPNProtocols: ['h2'], rejectUnauthorized: false });
    s.once('secureConnect', () => {
      resolve(s);
    });
    s.once('error', reject);
  });
  socket.on('error', () => undefined);
  const session = http2Connect('https://joinservice', { createConnection: () => socket });
  session.on('error', () => undefined);
  cleanup.push(() => {
    session.destroy();
    socket.destroy();
  });
}

describe('JoinService TLS front: strangers that never answer the FIN (attacker 3)', () => {
  it('frees their idle connections once grpc-js closes them, instead of holding every socket for ever', async () => {
    // Production: idle 60 s (JOINSERVICE_DEFAULTS.connectionIdleMs), age 10 + 10 min; shortened here.
    const server = createGrpcServer({
      'grpc.max_connection_idle_ms': 300,
      'grpc.max_connection_age_ms': 400,
      'grpc.max_connection_age_grace_ms': 400,
    });
    new HealthStatus({ '': 'SERVING' }).addTo(server);
    const listener = new BoundedTlsListener(server, {
      ...serviceTlsIdentity(),
      maxHandshakes: 64,
      maxConnections: JOINSERVICE_DEFAULTS.maxConnections,
      staleHandshakeMs: 60_000,
      handshakeTimeoutMs: 10_000,
    });
    const port = await listener.listen(0, '127.0.0.1');
    cleanup.push(async () => {
      await listener.close(100);
      server.forceShutdown();
    });
    const front = (listener as unknown as { front: GrpcTlsFront }).front;
    const held = (): Promise<number> =>
      new Promise((resolve, reject) => {
        front.tls.getConnections((err, n) => {
          if (err) reject(err);
          else resolve(n);
        });
      });

    const relayPort = await neverClosingRelay(port);
    const strangers = 20;
    for (let i = 0; i < strangers; i++) await idleStranger(relayPort);
    expect(await held()).toBe(strangers);
    // Idle bound, age (+10 % jitter) and grace have all passed twice over.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(await held()).toBe(0);
  }, 30_000);
});
