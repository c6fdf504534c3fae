import { createServer } from 'node:tls';
import type { Socket } from 'node:net';
import type { Server as TlsServer, TlsOptions, TLSSocket } from 'node:tls';
import type * as grpc from '@grpc/grpc-js';
import { GrpcFront } from './grpc-front.js';
import type { GrpcFrontHooks } from './grpc-front.js';

/**
 * A TLS server in front of a grpc-js server. Terminating TLS ourselves lets a server pick a
 * certificate per connection (aTLS) or bound its handshakes (the JoinService), neither of which
 * grpc-js's own TLS can. A handshake that fails or times out is closed (Node's TLS server only
 * reports it and would keep the connection open for ever).
 */
export class GrpcTlsFront extends GrpcFront<TlsServer> {
  constructor(
    grpcServer: grpc.Server,
    tlsOptions: TlsOptions,
    hooks: GrpcFrontHooks & { onHandshakeError?: (err: Error) => void } = {},
  ) {
    super(grpcServer, (onEstablished) => createServer({ ALPNProtocols: ['h2'], ...tlsOptions }, onEstablished), hooks);
    this.tls.on('tlsClientError', (err: Error, socket: TLSSocket) => {
      hooks.onHandshakeError?.(err);
      socket.destroy();
    });
    // A peer already at its bound is cut at accept, before its ClientHello costs any TLS work.
    const established = this.established;
    if (established !== undefined) {
      this.tls.on('connection', (socket: Socket) => {
        const address = socket.remoteAddress ?? '';
        if (!established.full(address)) return;
        hooks.onRefused?.(address);
        socket.destroy();
      });
    }
  }

  get tls(): TlsServer {
    return this.server;
  }
}
