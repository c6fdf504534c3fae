import type * as grpc from '@grpc/grpc-js';
import { AttestedTlsServer } from '@constellation/atls';
import { deriveClusterId } from '@constellation/keys';
import { diskKeyCheck } from '@constellation/state-disk';
import { RecoveryServiceService, RejoinTicketRequest, createGrpcServer } from '@constellation/proto';
import type { RejoinTicket } from '@constellation/proto';
import { JoinServiceConnection, nextAttemptDelay } from './join-service-client.js';
import type { NodeContext } from './node-context.js';
import { recordKubernetesConfigured } from './kubernetes-configured.js';
import { readNodeState } from './node-state.js';
import { recoveryService } from './recovery-service.js';
import { errorMessage } from '@constellation/errors';

export interface RejoinOptions {
  initialBackoffMs: number;
  maxBackoffMs: number;
  requestTimeoutMs: number;
  /** Control planes also serve the RecoveryService here (after a full control-plane shutdown). */
  recovery?: { host: string; port: number; onListening?: (port: number) => void };
}

interface Keys {
  diskKey: Buffer;
  measurementSecret: Buffer;
  source: 'rejoin-ticket' | 'recovery';
}

/**
 * A node whose state disk already belongs to a cluster: get the disk key from the JoinService
 * (rejoin ticket) or, on a control plane, from `constellation recover`, whichever comes first;
 * check it opens the disk and belongs to the node's cluster; re-mark the TPM; start the kubelet.
 */
export async function rejoin(context: NodeContext, options: RejoinOptions): Promise<'rejoined'> {
  const log = context.logger.child({ component: 'rejoin' });
  const state = await readNodeState(context.disk);
  const diskUuid = await context.disk.uuid();
  // Read once: a wrong key, from a ticket or a Recover call, is refused for the price of a hash.
  const keyCheck = await context.disk.keyCheck();
  const progress = { settled: false };
  /** Set once either source gave keys; the RecoveryService then refuses further calls. */
  let settledBy: Keys['source'] | undefined;
  let recovery: AttestedTlsServer | undefined;
  let recoveryServer: grpc.Server | undefined;

  /**
   * Throws the reason unless the ticket's keys give this node's cluster ID and open this disk.
   * The cluster ID and the disk's key check first: they cost a hash each, the disk check a
   * cryptsetup run with the disk's memory-hard KDF, which a fake JoinService must not get to start.
   */
  const usable = async (ticket: RejoinTicket, endpoint: string): Promise<void> => {
    let reason: string | undefined;
    if (!deriveClusterId(ticket.measurementSecret, state.measurementSalt).equals(state.clusterId))
      reason = "its measurement secret does not give this node's cluster ID";
    else if (keyCheck !== undefined && !diskKeyCheck(ticket.stateDiskKey).equals(keyCheck))
      reason = "its key fails the key check in the state disk's header";
    else if (!(await context.disk.testPassphrase(ticket.stateDiskKey))) reason = 'its key does not open the state disk';
    if (reason === undefined) return;
    log.warn('rejoin ticket refused', { endpoint, reason });
    throw new Error(`rejoin ticket refused: ${reason}`);
  };

  const recovered = new Promise<Keys>((resolve) => {
    if (options.recovery === undefined || state.role !== 'control-plane') return;
    recoveryServer = createGrpcServer();
    recoveryServer.addService(
      RecoveryServiceService,
      recoveryService(context, {
        state,
        diskUuid,
        keyCheck,
        settledBy: () => settledBy,
        // The service checked the keys (cluster ID, then the disk): no second cryptsetup here.
        recovered: (keys) => {
          resolve({ ...keys, source: 'recovery' });
        },
      }),
    );
    recovery = new AttestedTlsServer(recoveryServer, { issuer: context.issuer, logger: context.logger });
    recovery.listen(options.recovery.port, options.recovery.host).then(
      (port) => {
        log.info('recovery server listening', { port });
        options.recovery?.onListening?.(port);
      },
      (err: unknown) => {
        log.error('recovery server could not listen', { err });
      },
    );
  });

  const connection = new JoinServiceConnection(context, options.requestTimeoutMs);
  const ticketed = (async (): Promise<Keys> => {
    // The receipt of the disk's join; a disk set up by an earlier version has none (its join was
    // recorded in the API).
    const diskReceipt = (await context.disk.diskReceipt()) ?? Buffer.alloc(0);
    const request = RejoinTicketRequest.encode({ diskUuid, diskReceipt }).finish();
    for (let attempt = 0; !progress.settled; attempt++) {
      let failure: unknown;
      try {
        const ticket = await connection.rejoin(request, usable);
        return { diskKey: ticket.stateDiskKey, measurementSecret: ticket.measurementSecret, source: 'rejoin-ticket' };
      } catch (err) {
        failure = err;
      }
      const delayMs = nextAttemptDelay(attempt, failure, options.initialBackoffMs, options.maxBackoffMs);
      if (failure !== undefined)
        log.info('no rejoin ticket yet', { attempt, error: errorMessage(failure), retryInMs: delayMs });
      await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
    return new Promise<Keys>(() => undefined);
  })();

  try {
    const keys = await Promise.race([ticketed, recovered]);
    progress.settled = true;
    settledBy = keys.source;
    // The node's configuration from an earlier boot, on the disk (with --state-mount).
    await context.mountStateDisk?.(keys.diskKey, false);
    // Before the mark: the node's configuration is from an earlier boot; only the kubelet remains.
    await recordKubernetesConfigured(context.paths);
    if (!(await context.lock.tryLock(state.clusterId, 'rejoin')))
      throw new Error('node lock already taken during rejoin');
    await context.startKubelet();
    log.info('rejoined the cluster', { source: keys.source, clusterId: state.clusterId.toString('hex') });
    return 'rejoined';
  } finally {
    progress.settled = true;
    const server = recovery;
    // Closing drains: the Recover answer reaches the CLI before the server goes away.
    if (server !== undefined) await server.close();
    recoveryServer?.forceShutdown();
  }
}
