import * as grpc from '@grpc/grpc-js';
import { errorMessage } from '@constellation/errors';
import { verifyInitSecret } from '@constellation/keys';
import type { Logger } from '@constellation/logger';
import { retryAfterMetadata, statusErrorOf } from '@constellation/proto';
import type { InitRequest, InitResponse } from '@constellation/proto';
import { checkInitRequest } from './init-request.js';
import { belowVersionFloor } from './kubernetes-version-floor.js';
import type { NodeContext } from './node-context.js';

export type InitCall = grpc.ServerWritableStream<InitRequest, InitResponse>;

/** Init-secret checks (a metadata fetch and a memory-hard scrypt) under way at once, in all. */
export const MAX_SECRET_CHECKS = 4;
/** What a caller turned away for load is told to wait before asking again. */
export const SECRET_CHECK_RETRY_AFTER_MS = 1_000;

/** Why a call may not start an init: a status code, its message and metadata. */
export type InitRefusal = [grpc.status, string, grpc.Metadata?];

/**
 * Who may start an init: a well-formed request for a version this node runs, from a caller who
 * knows the init secret, on a node nobody else is initialising or has taken.
 */
export class InitAdmission {
  /**
   * Init-secret checks under way, by peer (address and port: one connection). One connection's
   * HTTP/2 streams cost a stranger one attestation, and each ran a check at once: 200 of them kept
   * libuv's threads busy with scrypt for seconds and the operator's Init waited behind them
   * (red-team finding). Now a connection has one check at a time and the node a few; the rest are
   * refused before any work, told when to come back, as the RecoveryService does.
   */
  private readonly checking = new Set<string>();
  private checksUnderWay = 0;
  private readonly retryAfter = retryAfterMetadata(SECRET_CHECK_RETRY_AFTER_MS);
  private readonly context: NodeContext;
  private readonly log: Logger;

  constructor(context: NodeContext, log: Logger) {
    this.context = context;
    this.log = log;
  }

  /** Why `call` may not start an init, or undefined; `busy` says whether an init is under way. */
  async refusal(call: InitCall, busy: () => boolean): Promise<InitRefusal | undefined> {
    const { context } = this;
    const malformed = this.requestRefusal(call.request);
    if (malformed !== undefined) return malformed;
    const peer = call.getPeer();
    if (this.checking.has(peer) || this.checksUnderWay >= MAX_SECRET_CHECKS) {
      return [
        grpc.status.UNAVAILABLE,
        this.checking.has(peer)
          ? 'this connection already has an init-secret check under way; one at a time'
          : 'too many init-secret checks are under way; retry',
        this.retryAfter,
      ];
    }
    const wrongSecret = await this.secretRefusal(call.request, peer);
    if (wrongSecret !== undefined) return wrongSecret;
    if (busy()) return [grpc.status.FAILED_PRECONDITION, 'node is already being initialised'];
    if (context.lock.heldBy !== undefined)
      return [grpc.status.FAILED_PRECONDITION, `node is already taken by ${context.lock.heldBy}`];
    return undefined;
  }

  /** Every field checked, and the version not below this node's floor. */
  private requestRefusal(request: InitRequest): InitRefusal | undefined {
    try {
      checkInitRequest(request);
    } catch (err) {
      const status = statusErrorOf(err);
      if (status !== undefined) return [status.code, status.message];
      throw err;
    }
    const { kubernetesVersion } = request;
    const belowFloor = belowVersionFloor(
      kubernetesVersion === '' ? this.context.defaultKubernetesVersion : kubernetesVersion,
      this.context.minimumKubernetesVersion,
    );
    if (belowFloor !== undefined)
      return [grpc.status.INVALID_ARGUMENT, `init request field kubernetes_version: ${belowFloor}`];
    return undefined;
  }

  /** The init secret against the hash in instance metadata, one check at a time per connection. */
  private async secretRefusal(request: InitRequest, peer: string): Promise<InitRefusal | undefined> {
    this.checking.add(peer);
    this.checksUnderWay++;
    try {
      let hash: string;
      try {
        hash = await this.context.metadata.initSecretHash();
      } catch (err) {
        return [grpc.status.UNAVAILABLE, `cannot check the init secret: ${errorMessage(err)}`];
      }
      if (!(await verifyInitSecret(request.initSecret, hash))) {
        this.log.warn('init refused: wrong init secret', { peer });
        return [grpc.status.PERMISSION_DENIED, 'wrong init secret'];
      }
      return undefined;
    } finally {
      this.checking.delete(peer);
      this.checksUnderWay--;
    }
  }
}
