import type { Server as NetServer, Socket } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { EstablishedConnections } from './established-connections.js';
import { listeningCopies } from './listening-copies.js';
import type { EstablishedLimit } from './established-connections.js';

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

/** The TCP port `server` listens on (`asked` when it has no TCP address). */
function boundPort(server: NetServer | undefined, asked: number): number {
  const address = server?.address();
  return typeof address === 'object' && address !== null ? address.port : asked;
}

export interface GrpcFrontHooks {
  /** Sees each connection once it is established (TLS: its handshake done), before grpc-js gets it. */
  onSecure?: (socket: Socket) => void;
  /** With it, an established connection beyond the limit is closed at once (`onRefused` is told). */
  established?: EstablishedLimit;
  onRefused?: (address: string) => void;
}

/**
 * A listener that hands each established connection to a grpc-js server (its connection
 * injector), instead of grpc-js listening itself: it owns listening, the established connections
 * (their caps, and the end of those whose peer never closes its side) and the graceful close.
 * GrpcTlsFront terminates TLS in front; GrpcPlainFront serves plaintext (health probes).
 */
export class GrpcFront<S extends NetServer> {
  readonly server: S;
  private readonly injector: ReturnType<grpc.Server['createConnectionInjector']>;
  private readonly sockets = new Set<Socket>();
  /** The listening copies that accept for `server`, when `listen` made them. */
  private readonly copies: NetServer[] = [];
  /** With `hooks.established`: what is kept, per address and in all. */
  protected readonly established: EstablishedConnections | undefined;

  /** `listen` makes the server with the handler of its established connections. */
  protected constructor(
    grpcServer: grpc.Server,
    listen: (onEstablished: (socket: Socket) => void) => S,
    hooks: GrpcFrontHooks = {},
  ) {
    this.injector = grpcServer.createConnectionInjector(grpc.ServerCredentials.createInsecure());
    const established = hooks.established === undefined ? undefined : new EstablishedConnections(hooks.established);
    this.established = established;
    this.server = listen((socket) => {
      if (established !== undefined && !established.admit(socket)) {
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
  }

  /**
   * Listens on `host:port` (port 0 picks a free port) and resolves with the bound port. With
   * `acceptors` above 1, that many copies of the listening socket accept connections for the
   * server (see listeningCopies): a busy event loop then accepts that many per turn.
   */
  async listen(port: number, host: string, acceptors = 1): Promise<number> {
    if (acceptors > 1) {
      // Each copy hands its connections over from the moment it arrives (see listeningCopies).
      const copies = await listeningCopies(port, host, acceptors, (socket) => {
        this.server.emit('connection', socket);
      });
      this.copies.push(...copies);
      return boundPort(copies[0], port);
    }
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        resolve(boundPort(this.server, port));
      });
    });
  }

  /**
   * Stops accepting connections and lets calls in flight finish, so their last messages and
   * status reach the client (HTTP/2 GOAWAY, then each connection closes once idle). Connections
   * still open after `graceMs` are cut.
   */
  async close(graceMs = 2_000): Promise<void> {
    for (const copy of this.copies) copy.close();
    const closed = new Promise<void>((resolve) =>
      this.server.close(() => {
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
