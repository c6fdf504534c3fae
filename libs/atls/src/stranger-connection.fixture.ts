import { randomBytes } from 'node:crypto';
import { connect as http2Connect } from 'node:http2';
import type { ClientHttp2Session } from 'node:http2';
import { connect as tlsConnect } from 'node:tls';
import type { ConnectionOptions, TLSSocket } from 'node:tls';
import { nonceToServerName } from './nonce-server-name.js';

/** A stranger's aTLS connection options: a well-formed nonce, and no care for who the node is. */
export function strangerTlsOptions(port: number): ConnectionOptions {
  return {
    host: '127.0.0.1',
    port,
    servername: nonceToServerName(randomBytes(32)),
    ALPNProtocols: ['h2'],
    rejectUnauthorized: false,
  };
}

export interface Stalled {
  socket: TLSSocket;
  session: ClientHttp2Session;
}

/** A stranger's connection: a well-formed nonce, a finished handshake, then one call that never ends. */
export async function stalledCall(port: number, kind: 'partial-request' | 'watch' | 'no-call'): Promise<Stalled> {
  const socket = await new Promise<TLSSocket>((resolve, reject) => {
    const s = tlsConnect(strangerTlsOptions(port));
    s.once('secureConnect', () => {
      resolve(s);
    });
    s.once('error', reject);
  });
  const session = http2Connect('https://node', { createConnection: () => socket });
  session.on('error', () => undefined);
  if (kind === 'no-call') return { socket, session };
  const path = kind === 'watch' ? '/grpc.health.v1.Health/Watch' : '/grpc.health.v1.Health/Check';
  const stream = session.request({
    ':method': 'POST',
    ':path': path,
    'content-type': 'application/grpc',
    te: 'trailers',
  });
  stream.on('error', () => undefined);
  stream.on('data', () => undefined);
  if (kind === 'watch')
    stream.end(Buffer.from([0, 0, 0, 0, 0])); // an empty HealthCheckRequest
  else stream.write(Buffer.from([0, 0, 0, 0, 100])); // announces 100 bytes, sends none
  return { socket, session };
}
