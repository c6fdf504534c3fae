import { createServer } from 'node:tls';
import type { Socket } from 'node:net';
import type { Server as TlsServer, TlsOptions, TLSSocket } from 'node:tls';
import * as grpc from '@grpc/grpc-js';

/**
 * A connection's remote address and port, as grpc-js names a call's peer; the same for the TCP
 * socket and the TLS socket over it.
 */
export function connectionPeer(socket: Socket): string {
  return `${socket.remoteAddress ?? ''}:${String(socket.remotePort ?? '')}`;
}

/**
 * A TLS server that hands each finished connection to a grpc-js server (its connection injector).
 * Terminating TLS ourselves lets a server pick a certificate per connection (aTLS) or bound its
 * handshakes (the JoinService), neither of which grpc-js's own TLS can. Owns listening, the
 * established connections and the graceful close; a handshake that fails or times out is closed
 * (Node's TLS server only reports it and would keep the connection open for ever).
 */
export class GrpcTlsFront {
  readonly tls: TlsServer;
  private readonly injector: ReturnType<grpc.Server['createConnectionInjector']>;
  private readonly sockets = new Set<TLSSocket>();

  /** `onSecure` sees each connection once its handshake is done, before grpc-js gets it. */
  constructor(
    grpcServer: grpc.Server,
    tlsOptions: TlsOptions,
    hooks: { onSecure?: (socket: TLSSocket) => void; onHandshakeError?: (err: Error) => void } = {},
  ) {
    this.injector = grpcServer.createConnectionInjector(grpc.ServerCredentials.createInsecure());
    this.tls = createServer({ ALPNProtocols: ['h2'], ...tlsOptions }, (socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
      hooks.onSecure?.(socket);
      this.injector.injectConnection(socket);
    });
    this.tls.on('tlsClientError', (err: Error, socket: TLSSocket) => {
      hooks.onHandshakeError?.(err);
      socket.destroy();
    });
  }

  /** Listens on `host:port` (port 0 picks a free port) and resolves with the bound port. */
  listen(port: number, host: string): Promise<number> {
    return new Promise((resolve, reject) => {
      this.tls.once('error', reject);
      this.tls.listen(port, host, () => {
        this.tls.off('error', reject);
        const address = this.tls.address();
        resolve(typeof address === 'object' && address !== null ? address.port : port);
      });
    });
  }

  /**
   * Stops accepting connections and lets calls in flight finish, so their last messages and
   * status reach the client (HTTP/2 GOAWAY, then each connection closes once idle). Connections
   * still open after `graceMs` are cut.
   */
  async close(graceMs = 2_000): Promise<void> {
    const closed = new Promise<void>((resolve) =>
      this.tls.close(() => {
        resolve();
      }),
    );
    this.injector.drain(graceMs);
    const cut = setTimeout(() => {
      for (const socket of this.sockets) socket.destroy();
    }, graceMs);
    await closed;
    clearTimeout(cut);
    this.injector.destroy();
  }
}
