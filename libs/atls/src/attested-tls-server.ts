import { generateKeyPair } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { createSecureContext } from 'node:tls';
import type { Socket } from 'node:net';
import type { SecureContext, TLSSocket } from 'node:tls';
import type * as grpc from '@grpc/grpc-js';
import { withTpmPriority } from '@constellation/tpm';
import type { Issuer } from '@constellation/attestation';
import { noopLogger } from '@constellation/logger';
import type { Logger } from '@constellation/logger';
import { ActivationBudget, addActivationService } from './activation-service.js';
import { connectionPeer } from './grpc-front.js';
import { GrpcTlsFront } from './grpc-tls-front.js';
import type { EstablishedLimit } from './established-connections.js';
import { processAttestationLimits } from './attestation-limits.js';
import type { AttestationLimits } from './attestation-limits.js';
import { serverNameToNonce } from './nonce-server-name.js';
import { issueFromPublicRoot } from './public-root.js';
import { spkiUserData } from './spki-binding.js';

export interface AttestedTlsServerOptions {
  /** Makes the attestation each connection's certificate carries. */
  issuer: Issuer;
  logger?: Logger;
  /** Bounds on handshake attestations; the process-wide limits by default. */
  limits?: AttestationLimits;
  /**
   * A connection whose handshake (the server's attestation included) is not done by then is
   * closed; 30 s by default. Node's TLS server only reports the timeout and keeps the connection.
   */
  handshakeTimeoutMs?: number;
  /** Finished connections kept at once, per remote address and in all; 32 and 256 by default. */
  maxConnections?: EstablishedLimit;
}

const DEFAULT_MAX_CONNECTIONS: EstablishedLimit = { perAddress: 32, total: 256 };

type SniDone = (err: Error | null, context?: SecureContext) => void;

/**
 * Serves a grpc-js server over server-attested TLS. For every connection the client's nonce
 * arrives in SNI; the server makes a fresh ECDSA P-256 key, an attestation over SHA-256 of its
 * SubjectPublicKeyInfo and that nonce, and a certificate carrying the attestation in an
 * extension (OID of the variant). TLS is terminated here and the connection handed to grpc-js,
 * because grpc-js's own TLS cannot pick a certificate per connection. With a rooted issuer the
 * server also serves the ActivationService (see proveServerIdentity).
 */
export class AttestedTlsServer {
  private readonly front: GrpcTlsFront;
  private readonly activations = new ActivationBudget({ perConnection: true });
  /** Each established connection's nonce (from its SNI), by peer: what its activation proof binds. */
  private readonly connectionNonces = new Map<string, Buffer>();
  private readonly log: Logger;

  constructor(grpcServer: grpc.Server, options: AttestedTlsServerOptions) {
    this.log = (options.logger ?? noopLogger).child({ component: 'atls-server' });
    const issuer = options.issuer;
    const limits = options.limits ?? processAttestationLimits;
    const log = this.log;
    // Rooted issuers also answer credentials, so clients can prove the AK sits beside a certified EK
    // (init, recover and verify all do): for the connection's own nonce only, with the aTLS label.
    if (issuer.rooted !== undefined) {
      addActivationService(grpcServer, issuer.rooted, this.activations, {
        protocol: 'atls-server',
        connectionNonce: (peer) => this.connectionNonces.get(peer),
      });
    }
    this.front = new GrpcTlsFront(
      grpcServer,
      {
        minVersion: 'TLSv1.3',
        handshakeTimeout: options.handshakeTimeoutMs ?? 30_000,
        // A function, not an arrow: Node calls it with the TLSSocket as `this`, which names the peer.
        SNICallback: function (this: TLSSocket, serverName: string, done: SniDone) {
          const nonce = serverNameToNonce(serverName);
          if (nonce === undefined) {
            done(new Error('client sent no aTLS nonce in the server name'), undefined);
            return;
          }
          const peer = this.remoteAddress ?? 'unknown';
          const refusal = limits.take(peer);
          if (refusal !== undefined) {
            log.debug('attestation refused: busy', { peer, reason: refusal });
            done(new Error(`attestation refused: ${refusal}`), undefined);
            return;
          }
          // Work for a remote caller: it never delays the node's own TPM sequences.
          withTpmPriority('background', () => attestedContext(issuer, nonce))
            .then(
              (context) => {
                done(null, context);
              },
              (err: unknown) => {
                log.error('could not attest a connection', { err });
                done(err instanceof Error ? err : new Error(String(err)), undefined);
              },
            )
            .finally(() => {
              limits.release(peer);
            });
        },
      },
      {
        // A connection that finished its handshake and keeps a call open forever (a request that
        // never arrives, a Health/Watch) is not closed by any time bound; this bounds how many
        // one stranger keeps, and how many there are at all (red-team finding: none was bounded).
        established: options.maxConnections ?? DEFAULT_MAX_CONNECTIONS,
        onRefused: (address) => {
          this.log.debug('connection refused: too many open', { peer: address });
        },
        onSecure: (socket) => {
          const peer = connectionPeer(socket);
          const nonce = serverNameToNonce(String((socket as TLSSocket).servername));
          if (nonce !== undefined) this.connectionNonces.set(peer, nonce);
          socket.once('close', () => {
            this.activations.forget(peer);
            if (this.connectionNonces.get(peer) === nonce) this.connectionNonces.delete(peer);
          });
        },
        onHandshakeError: (err) => {
          this.log.debug('TLS handshake failed', { error: err.message });
        },
      },
    );
    // A peer already at its bound is cut at accept, before its ClientHello costs any TLS work.
    this.front.tls.on('connection', (socket: Socket) => {
      if (limits.saturated(socket.remoteAddress ?? 'unknown')) socket.destroy();
    });
  }

  /** Listens on `host:port` (port 0 picks a free port) and resolves with the bound port. */
  listen(port: number, host: string): Promise<number> {
    return this.front.listen(port, host);
  }

  /**
   * Stops accepting connections and lets calls in flight finish, so their last messages and
   * status reach the client (HTTP/2 GOAWAY, then each connection closes once idle). Connections
   * still open after `graceMs` are cut.
   */
  close(graceMs = 2_000): Promise<void> {
    return this.front.close(graceMs);
  }
}

async function attestedContext(issuer: Issuer, nonce: Buffer): Promise<SecureContext> {
  const { publicKey, privateKey } = await new Promise<{ publicKey: KeyObject; privateKey: KeyObject }>(
    (resolve, reject) => {
      generateKeyPair('ec', { namedCurve: 'P-256' }, (err, pub, priv) => {
        if (err) reject(err);
        else resolve({ publicKey: pub, privateKey: priv });
      });
    },
  );
  const spki = publicKey.export({ type: 'spki', format: 'der' });
  const document = await issuer.issue(spkiUserData(spki), nonce);
  const certificatePem = issueFromPublicRoot(publicKey, 'constellation attested node', [
    { oid: issuer.variant.oid, critical: false, value: document },
  ]);
  return createSecureContext({
    key: privateKey.export({ type: 'pkcs8', format: 'pem' }),
    cert: certificatePem,
    minVersion: 'TLSv1.3',
  });
}
