import type { Socket } from 'node:net';
import { createServer } from 'node:tls';
import type { Server as TlsServer, TLSSocket } from 'node:tls';
import * as grpc from '@grpc/grpc-js';

export interface BoundedTlsListenerOptions {
  /** Server key and certificate chain, PEM. */
  key: string;
  cert: string;
  /** Connections whose TLS handshake may be under way at once. */
  maxHandshakes: number;
  /**
   * A handshake under way longer than this gives its place to a newcomer that finds every place
   * taken: a client that stalls mid-handshake holds a place only this long once others wait.
   */
  staleHandshakeMs: number;
  /** A handshake not finished by then is dropped whatever the load. */
  handshakeTimeoutMs: number;
  /** Told of every connection reset for load (for metrics). */
  onShed?: (reason: 'busy' | 'stale') => void;
}

/**
 * Terminates TLS in front of a grpc-js server so that connections still in their handshake are
 * bounded in time and number. Node's TLS server (grpc-js's included) never closes a connection
 * whose handshake stalls: its handshake timeout only reports it (measured), so a stranger's idle
 * connections would hold descriptors and memory for ever. Here a handshake is cut after
 * `handshakeTimeoutMs`; at most `maxHandshakes` are under way, a newcomer beyond them cuts the
 * oldest if it has stalled past `staleHandshakeMs` and is reset at accept otherwise (before any
 * TLS work). The bound is for floods, not storms: set low enough to bite in a 500-node storm
 * (64 or 256) it raised joins per second but made admitted calls slower, the nodes paying for
 * reconnects (measured in the storm bench).
 */
export class BoundedTlsListener {
  private readonly tls: TlsServer;
  private readonly injector: ReturnType<grpc.Server['createConnectionInjector']>;
  /** Connections whose handshake is under way, oldest first, by remote address and port. */
  private readonly handshaking = new Map<string, { socket: Socket; since: number }>();
  private readonly sockets = new Set<TLSSocket>();

  constructor(grpcServer: grpc.Server, options: BoundedTlsListenerOptions) {
    this.injector = grpcServer.createConnectionInjector(grpc.ServerCredentials.createInsecure());
    this.tls = createServer(
      {
        key: options.key,
        cert: options.cert,
        ALPNProtocols: ['h2'],
        noDelay: true,
        handshakeTimeout: options.handshakeTimeoutMs,
      },
      (socket) => {
        this.sockets.add(socket);
        socket.once('close', () => this.sockets.delete(socket));
        this.injector.injectConnection(socket);
      },
    );
    // Runs after tls.Server's own listener, which wrapped the socket: its handshake starts once
    // this returns, so a reset here costs no TLS work.
    this.tls.on('connection', (socket: Socket) => {
      if (
        this.handshaking.size >= options.maxHandshakes &&
        !this.evictStale(options.staleHandshakeMs, options.onShed)
      ) {
        options.onShed?.('busy');
        socket.resetAndDestroy();
        return;
      }
      const peer = peerOf(socket);
      this.handshaking.set(peer, { socket, since: performance.now() });
      socket.once('close', () => this.handshaking.delete(peer));
    });
    this.tls.on('secureConnection', (socket: TLSSocket) => this.handshaking.delete(peerOf(socket)));
    // Garbage, resets and handshake timeouts: Node only reports them; the connection is ours to close.
    this.tls.on('tlsClientError', (_err: Error, socket: TLSSocket) => {
      socket.destroy();
    });
  }

  /** Cuts the oldest handshake if it has been under way for `staleMs`; true when it did. */
  private evictStale(staleMs: number, onShed: BoundedTlsListenerOptions['onShed']): boolean {
    for (const [peer, { socket, since }] of this.handshaking) {
      if (performance.now() - since < staleMs) return false;
      this.handshaking.delete(peer);
      onShed?.('stale');
      socket.resetAndDestroy();
      return true;
    }
    return false;
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

  /** Stops accepting, lets calls in flight finish for `graceMs`, then cuts what is left. */
  async close(graceMs = 2_000): Promise<void> {
    const closed = new Promise<void>((resolve) =>
      this.tls.close(() => {
        resolve();
      }),
    );
    this.injector.drain(graceMs);
    for (const { socket } of this.handshaking.values()) socket.destroy();
    const cut = setTimeout(() => {
      for (const socket of this.sockets) socket.destroy();
    }, graceMs);
    await closed;
    clearTimeout(cut);
    this.injector.destroy();
  }
}

/** A connection's remote address and port: the same for the TCP socket and the TLS socket over it. */
function peerOf(socket: Socket): string {
  return `${socket.remoteAddress ?? ''}:${String(socket.remotePort ?? '')}`;
}
