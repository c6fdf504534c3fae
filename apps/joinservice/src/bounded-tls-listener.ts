import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type * as grpc from '@grpc/grpc-js';
import { GrpcTlsFront, connectionPeer } from '@constellation/atls';
import type { EstablishedLimit } from '@constellation/atls';

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
  /** Established connections kept, per remote address and in all; more are cut at accept. */
  maxConnections: EstablishedLimit;
  /** Told of every connection reset for load (for metrics). */
  onShed?: (reason: 'busy' | 'stale' | 'connections') => void;
  /**
   * Told, for every finished handshake, how long it took from the connection's accept (for
   * metrics): in a storm, connections wait here for the service's CPU before any call is made.
   */
  onHandshake?: (ms: number) => void;
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
  private readonly front: GrpcTlsFront;
  /** Connections whose handshake is under way, oldest first, by remote address and port. */
  private readonly handshaking = new Map<string, { socket: Socket; since: number }>();

  constructor(grpcServer: grpc.Server, options: BoundedTlsListenerOptions) {
    this.front = new GrpcTlsFront(
      grpcServer,
      {
        key: options.key,
        cert: options.cert,
        noDelay: true,
        handshakeTimeout: options.handshakeTimeoutMs,
      },
      {
        established: options.maxConnections,
        onRefused: () => options.onShed?.('connections'),
      },
    );
    // Runs after tls.Server's own listener, which wrapped the socket: its handshake starts once
    // this returns, so a reset here costs no TLS work.
    this.front.tls.on('connection', (socket: Socket) => {
      if (
        this.handshaking.size >= options.maxHandshakes &&
        !this.evictStale(options.staleHandshakeMs, options.onShed)
      ) {
        options.onShed?.('busy');
        socket.resetAndDestroy();
        return;
      }
      const peer = connectionPeer(socket);
      this.handshaking.set(peer, { socket, since: performance.now() });
      socket.once('close', () => this.handshaking.delete(peer));
    });
    this.front.tls.on('secureConnection', (socket: TLSSocket) => {
      const peer = connectionPeer(socket);
      const since = this.handshaking.get(peer)?.since;
      this.handshaking.delete(peer);
      if (since !== undefined) options.onHandshake?.(performance.now() - since);
    });
  }

  /** Cuts the oldest handshake if it has been under way for `staleMs`; true when it did. */
  private evictStale(staleMs: number, onShed: BoundedTlsListenerOptions['onShed']): boolean {
    const oldest = this.handshaking.entries().next();
    if (oldest.done === true) return false;
    const [peer, { socket, since }] = oldest.value;
    if (performance.now() - since < staleMs) return false;
    this.handshaking.delete(peer);
    onShed?.('stale');
    socket.resetAndDestroy();
    return true;
  }

  /**
   * Listens on `host:port` (port 0 picks a free port) and resolves with the bound port;
   * `acceptors` copies of the listening socket accept connections (see GrpcFront.listen).
   */
  listen(port: number, host: string, acceptors = 1): Promise<number> {
    return this.front.listen(port, host, acceptors);
  }

  /** Stops accepting, lets calls in flight finish for `graceMs`, then cuts what is left. */
  close(graceMs = 2_000): Promise<void> {
    for (const { socket } of this.handshaking.values()) socket.destroy();
    return this.front.close(graceMs);
  }
}
