import { timingSafeEqual } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { StatusError, statusErrorOf } from '@constellation/proto';
import { deriveClusterId } from '@constellation/keys';
import { diskKeyCheck } from '@constellation/state-disk';
import type {
  DescribeRequest,
  DescribeResponse,
  RecoverRequest,
  RecoverResponse,
  RecoveryServiceServer,
} from '@constellation/proto';
import type { NodeContext } from './node-context.js';
import type { NodeState } from './node-state.js';
import { errorMessage } from '@constellation/errors';

/** What a Recover caller is told to wait before asking again while another attempt is checked. */
export const RECOVERY_RETRY_AFTER_MS = 1_000;

/** Keys that belong to this node's cluster and open its state disk. */
export interface RecoveredKeys {
  diskKey: Buffer;
  measurementSecret: Buffer;
}

export interface RecoveryServiceOptions {
  /** The node's recorded cluster (salt and ID are public, so checking against them costs nothing). */
  state: NodeState;
  diskUuid: string;
  /** The disk key's check from the disk's token (diskKeyCheck); undefined on a disk set up before it. */
  keyCheck?: Buffer | undefined;
  /** How the node already got its keys, if it has: every later Recover is refused. */
  settledBy: () => 'recovery' | 'rejoin-ticket' | undefined;
  /** Told once of keys that passed every check. */
  recovered: (keys: RecoveredKeys) => void;
}

/**
 * The RecoveryService of a control plane waiting after a full control-plane shutdown. It is given
 * what a rejoin ticket carries (its disk's key and the measurement secret), never the master
 * secret: the CLI derives the key for the disk this node describes and the TPM it proved, so a
 * genuine machine the operator did not mean gets a key for its own disk only (red-team finding:
 * it used to get the master secret). Anyone who can reach the port may call it, so the order of
 * checks keeps strangers cheap:
 *  1. sizes (INVALID_ARGUMENT naming the field);
 *  2. the node already recovered or rejoined (FAILED_PRECONDITION);
 *  3. the measurement secret must reproduce the node's recorded cluster ID, one HKDF and a
 *     constant-time compare (PERMISSION_DENIED, the disk is not touched);
 *  4. the disk key must match the key check in the disk's header, one hash (PERMISSION_DENIED):
 *     every member knows the measurement secret, and a member's owner looping made-up keys past
 *     step 3 kept the one disk check busy, so the operator's recover only ever heard "retry"
 *     (red-team finding, recovery-starvation-attack.test.ts);
 *  5. one disk check at a time: while one runs, others get UNAVAILABLE with `retry-after-ms`;
 *  6. only then `cryptsetup --test-passphrase` with the disk's real (memory-hard) KDF.
 */
export function recoveryService(context: NodeContext, options: RecoveryServiceOptions): RecoveryServiceServer {
  const log = context.logger.child({ component: 'recovery-service' });
  const { state, diskUuid } = options;
  let checking = false;
  let recovered = false;

  const recover = async (request: RecoverRequest, peer: string): Promise<RecoverResponse> => {
    checkRecoverRequest(request);
    const settledBy = recovered ? 'recovery' : options.settledBy();
    if (settledBy !== undefined)
      throw new StatusError(
        grpc.status.FAILED_PRECONDITION,
        settledBy === 'recovery'
          ? 'this node is already recovered: its state disk is open and it rejoined its cluster'
          : 'this node is already recovered: it rejoined its cluster with a rejoin ticket from the JoinService',
      );
    const { measurementSecret, stateDiskKey } = request;
    if (!sameBytes(deriveClusterId(measurementSecret, state.measurementSalt), state.clusterId)) {
      log.debug('Recover refused: measurement secret of another cluster', { peer });
      throw new StatusError(
        grpc.status.PERMISSION_DENIED,
        "this measurement secret does not belong to this node's cluster",
      );
    }
    if (options.keyCheck !== undefined && !sameBytes(diskKeyCheck(stateDiskKey), options.keyCheck)) {
      // Debug, as above: these refusals cost the caller nothing, so a warning each would flood the log.
      log.debug("Recover refused: a key of this node's cluster fails its state disk's key check", { peer });
      throw new StatusError(
        grpc.status.PERMISSION_DENIED,
        `this key does not open state disk ${diskUuid} of this node (it fails the key check in the disk's header; the measurement secret is this cluster's: was the key derived for another disk or machine?)`,
      );
    }
    if (checking)
      throw new StatusError(
        grpc.status.UNAVAILABLE,
        'another recovery attempt is being checked; retry',
        { 'retry-after-ms': String(RECOVERY_RETRY_AFTER_MS) },
        'busy',
      );
    checking = true;
    const keys: RecoveredKeys = {
      diskKey: Buffer.from(stateDiskKey),
      measurementSecret: Buffer.from(measurementSecret),
    };
    try {
      let opens: boolean;
      try {
        opens = await context.disk.testPassphrase(keys.diskKey);
      } catch (err) {
        throw new StatusError(
          grpc.status.INTERNAL,
          `could not check the key against the state disk: ${errorMessage(err)}`,
        );
      }
      if (!opens) {
        log.warn("Recover refused: a key of this node's cluster does not open its state disk", { peer });
        throw new StatusError(
          grpc.status.PERMISSION_DENIED,
          `this key does not open state disk ${diskUuid} of this node (the measurement secret is this cluster's: was the key derived for another disk or machine?)`,
        );
      }
    } finally {
      checking = false;
    }
    recovered = true;
    log.info('recovery key accepted: the state disk opens', { peer });
    options.recovered(keys);
    return { diskUuid, clusterIdHex: state.clusterId.toString('hex') };
  };

  return {
    describe: (
      _call: grpc.ServerUnaryCall<DescribeRequest, DescribeResponse>,
      callback: grpc.sendUnaryData<DescribeResponse>,
    ) => {
      callback(null, { diskUuid, clusterIdHex: state.clusterId.toString('hex') });
    },
    recover: (
      call: grpc.ServerUnaryCall<RecoverRequest, RecoverResponse>,
      callback: grpc.sendUnaryData<RecoverResponse>,
    ) => {
      recover(call.request, call.getPeer()).then(
        (response) => {
          callback(null, response);
        },
        (err: unknown) => {
          const status = statusErrorOf(err);
          if (status !== undefined) {
            callback({ code: status.code, details: status.message, metadata: status.metadata });
            return;
          }
          log.error('Recover failed', { err });
          callback({ code: grpc.status.INTERNAL, details: `recovery failed: ${errorMessage(err)}` });
        },
      );
    },
  };
}

/** Throws INVALID_ARGUMENT naming the first field that is wrong. */
export function checkRecoverRequest(request: RecoverRequest): void {
  if (request.stateDiskKey.length !== 32)
    throw new StatusError(
      grpc.status.INVALID_ARGUMENT,
      `recover request field state_disk_key: must be 32 bytes, got ${request.stateDiskKey.length}`,
    );
  if (request.measurementSecret.length !== 32)
    throw new StatusError(
      grpc.status.INVALID_ARGUMENT,
      `recover request field measurement_secret: must be 32 bytes, got ${request.measurementSecret.length}`,
    );
}

/** Constant-time equality (the lengths are public: cluster IDs and key checks are 32 bytes). */
function sameBytes(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
