import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { createKubeletCsr, deriveClusterId } from '@constellation/keys';
import { JoinTicketRequest, StatusError } from '@constellation/proto';
import type { JoinTicket } from '@constellation/proto';
import { JoinServiceConnection, nextAttemptDelay } from './join-service-client.js';
import { rekeyStateDisk } from './disk-activation.js';
import type { Instance } from './metadata-client.js';
import type { NodeContext } from './node-context.js';
import { recordJoinStatus, joinStatusOf } from './join-status.js';
import { writeNodeState } from './node-state.js';
import { checkCredential, writeClientCredential, writeServingCredential } from './kubelet-credentials.js';
import { recordKubernetesConfigured } from './kubernetes-configured.js';
import { belowVersionFloor } from './kubernetes-version-floor.js';
import { errorMessage } from '@constellation/errors';

export interface JoinClientOptions {
  initialBackoffMs: number;
  maxBackoffMs: number;
  /** Bound for one ticket request, including connecting and attesting. */
  requestTimeoutMs: number;
  /** Called once the lock is taken: the InitServer must stop. */
  committed: () => void;
}

export type JoinOutcome = 'joined' | 'stopped';

/** The private keys of the kubelet's two certificate requests (PEM; secret). */
interface KubeletKeys {
  clientKeyPem: string;
  servingKeyPem: string;
}

/**
 * Polls the JoinService until it hands out a ticket, with exponential backoff and jitter. Getting
 * a ticket commits nothing; taking the node lock does. If the InitServer took the lock first, the
 * join client stops without touching the node.
 */
export class JoinClient {
  private stopped = false;
  private wake: (() => void) | undefined;
  /** The join status write under way, if any: one begun before stop() still lands. */
  private recording: Promise<void> = Promise.resolve();
  private readonly context: NodeContext;
  private readonly options: JoinClientOptions;
  private readonly connection: JoinServiceConnection;

  constructor(context: NodeContext, options: JoinClientOptions) {
    this.context = context;
    this.options = options;
    this.connection = new JoinServiceConnection(context, options.requestTimeoutMs);
  }

  /** Whether stop() was not called; read through a call, as `run` awaits between checks. */
  private running(): boolean {
    return !this.stopped;
  }

  /**
   * Stops polling; a join past its point of no return finishes regardless. Resolves once a join
   * status write begun before the stop has landed: nothing is written after that.
   */
  stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    return this.recording.catch(() => undefined);
  }

  async run(): Promise<JoinOutcome> {
    const log = this.context.logger.child({ component: 'join-client' });
    for (let attempt = 0; !this.stopped; attempt++) {
      let failure: unknown;
      let ticket: Awaited<ReturnType<JoinClient['requestTicket']>>;
      try {
        ticket = await this.requestTicket();
      } catch (err) {
        failure = err;
      }
      // Outside the try: a failure after the lock is not "no ticket yet" but fatal, and the
      // caller marks the disk for reset and runs the fatal action (Constellation's PR 2971).
      // Nothing is recorded once stopped: the InitServer owns the node (and its files) then.
      if (this.running() && (ticket !== undefined || failure !== undefined)) {
        this.recording = recordJoinStatus(this.context.paths.joinStatus, joinStatusOf(attempt, failure));
        await this.recording;
      }
      // A ticket that arrives once stopped is not used: the node stays as it is.
      if (ticket !== undefined)
        return this.running() ? this.activate(ticket.ticket, ticket.keys, ticket.self) : 'stopped';
      const delayMs = nextAttemptDelay(attempt, failure, this.options.initialBackoffMs, this.options.maxBackoffMs);
      if (failure !== undefined) {
        const code = (failure as { code?: number }).code;
        log.info('no join ticket yet', {
          attempt,
          error: errorMessage(failure),
          retryInMs: delayMs,
          ...(code === undefined ? {} : { code: grpc.status[code] }),
        });
      }
      await this.sleep(delayMs);
    }
    return 'stopped';
  }

  /**
   * Asks for a ticket with fresh kubelet keys: one CSR for the client certificate (no SANs), one
   * for the serving certificate (the node's name and IP). A ticket whose certificates do not fit
   * those keys counts as no ticket.
   */
  private async requestTicket(): Promise<{ ticket: JoinTicket; keys: KubeletKeys; self: Instance } | undefined> {
    const self = await this.context.metadata.self();
    const clientCsr = await createKubeletCsr(self.name, []);
    const servingCsr = await createKubeletCsr(self.name, [self.ip], [self.name]);
    const request = JoinTicketRequest.encode({
      diskUuid: await this.context.disk.uuid(),
      kubeletClientCertificateRequest: clientCsr.csrDer,
      kubeletServingCertificateRequest: servingCsr.csrDer,
      isControlPlane: self.role === 'control-plane',
    }).finish();
    const ticket = await this.connection.join(request, () => this.stopped);
    if (ticket === undefined) return undefined;
    const keys = { clientKeyPem: clientCsr.keyPem, servingKeyPem: servingCsr.keyPem };
    checkCredential('client', { certificatePem: ticket.kubeletClientCert, keyPem: keys.clientKeyPem });
    checkCredential('serving', { certificatePem: ticket.kubeletServingCert, keyPem: keys.servingKeyPem });
    // Before the point of no return: a node that will not run this version stays as it is, and
    // its join status says why (a refusal, as operators and mini read it), while it keeps asking.
    const belowFloor = belowVersionFloor(ticket.kubernetesVersion, this.context.minimumKubernetesVersion);
    if (belowFloor !== undefined)
      throw new StatusError(grpc.status.FAILED_PRECONDITION, `this node refuses the join ticket: ${belowFloor}`);
    // What the platform said of this node goes with the ticket: read again past the lock, a
    // metadata service that blinked would fail the join after the point of no return.
    return { ticket, keys, self };
  }

  /** Past the lock: re-key, write the ticket's files, run kubeadm join (as `self`, read before). */
  private async activate(ticket: JoinTicket, keys: KubeletKeys, self: Instance): Promise<JoinOutcome> {
    const { context } = this;
    const { role } = self;
    const log = context.logger.child({ component: 'join-client' });
    const clusterId = deriveClusterId(ticket.measurementSecret, ticket.measurementSalt);
    if (!(await context.lock.tryLock(clusterId, 'join'))) {
      log.info('the InitServer owns this node; not joining', { holder: context.lock.heldBy });
      return 'stopped';
    }
    this.options.committed();
    log.info('joining the cluster', {
      role,
      endpoint: ticket.apiServerEndpoint,
      kubernetesVersion: ticket.kubernetesVersion,
    });
    await rekeyStateDisk(context, ticket.stateDiskKey, ticket.diskReceipt);
    for (const file of ticket.controlPlaneFiles) {
      const path = join(context.paths.kubernetesPki, file.name);
      if (!path.startsWith(`${context.paths.kubernetesPki}/`) || file.name.includes('..'))
        throw new Error(`control-plane file name "${file.name}" escapes the PKI directory`);
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, file.data, { mode: file.name.endsWith('.key') ? 0o600 : 0o644 });
    }
    await writeServingCredential(context.paths, {
      certificatePem: ticket.kubeletServingCert,
      keyPem: keys.servingKeyPem,
    });
    await writeClientCredential(context.paths.kubeletCertDir, {
      certificatePem: ticket.kubeletClientCert,
      keyPem: keys.clientKeyPem,
    });
    await writeNodeState(context.disk, { role, measurementSalt: ticket.measurementSalt, clusterId });
    if (context.prepareNode !== undefined) await context.prepareNode(ticket.kubernetesVersion);
    // Loaded by a node that joins (kubeadm's configuration writer), not at every start.
    const { kubeadmJoin, kubeadmRunner } = await import('./kubeadm-driver.js');
    await kubeadmJoin(kubeadmRunner(context), {
      nodeName: self.name,
      nodeIp: self.ip,
      apiServerEndpoint: ticket.apiServerEndpoint,
      token: ticket.token,
      caCertHashes: [ticket.discoveryTokenCaCertHash],
      ...(role === 'control-plane' ? { controlPlane: { bindPort: context.apiServerBindPort } } : {}),
    });
    await recordKubernetesConfigured(context.paths);
    await context.startKubelet();
    log.info('joined the cluster', { clusterId: clusterId.toString('hex') });
    return 'joined';
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}
