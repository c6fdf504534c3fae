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
 * How long a connection whose sending side we ended stays open for the peer to close its own. grpc-js
 * ends a connection it is done with (idle, too old) gracefully: Node's http2 sends our FIN and
 * then waits for the peer's, for ever if the peer never sends it (red-team finding: a stranger's
 * sockets outlived every bound and filled the connection caps). The moment lets the peer read
 * what was sent before the socket is destroyed.
 */
const HALF_CLOSED_MS = 1_000;

/** Most established connections kept at once: from one remote address, and in all. */
export interface EstablishedLimit {
  perAddress: number;
  total: number;
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
  private readonly byAddress = new Map<string, number>();

  /**
   * `onSecure` sees each connection once its handshake is done, before grpc-js gets it. With
   * `established`, a finished connection beyond the limit is closed at once (`onRefused` is told).
   */
  constructor(
    grpcServer: grpc.Server,
    tlsOptions: TlsOptions,
    hooks: {
      onSecure?: (socket: TLSSocket) => void;
      onHandshakeError?: (err: Error) => void;
      established?: EstablishedLimit;
      onRefused?: (address: string) => void;
    } = {},
  ) {
    this.injector = grpcServer.createConnectionInjector(grpc.ServerCredentials.createInsecure());
    this.tls = createServer({ ALPNProtocols: ['h2'], ...tlsOptions }, (socket) => {
      if (!this.admit(socket, hooks.established)) {
        hooks.onRefused?.(socket.remoteAddress ?? '');
        socket.destroy();
        return;
      }
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
      socket.once('finish', () => {
        setTimeout(() => socket.destroy(), HALF_CLOSED_MS).unref();
      });
      hooks.onSecure?.(socket);
      this.injector.injectConnection(socket);
    });
    this.tls.on('tlsClientError', (err: Error, socket: TLSSocket) => {
      hooks.onHandshakeError?.(err);
      socket.destroy();
    });
  }

  /** Counts the connection against `limit`, or says it is one too many. */
  private admit(socket: TLSSocket, limit: EstablishedLimit | undefined): boolean {
    if (limit === undefined) return true;
    const address = socket.remoteAddress ?? '';
    const held = this.byAddress.get(address) ?? 0;
    if (held >= limit.perAddress || this.sockets.size >= limit.total) return false;
    this.byAddress.set(address, held + 1);
    socket.once('close', () => {
      const left = (this.byAddress.get(address) ?? 1) - 1;
      if (left > 0) this.byAddress.set(address, left);
      else this.byAddress.delete(address);
    });
    return true;
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
