import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { createKubeletCsr, deriveClusterId } from '@constellation/keys';
import { JoinTicketRequest, StatusError } from '@constellation/proto';
import type { JoinTicket } from '@constellation/proto';
import { JoinServiceConnection, nextAttemptDelay } from './join-service-client.js';
import { markStateDiskJoined, rekeyStateDisk } from './disk-activation.js';
import type { Instance } from './metadata-client.js';
import type { NodeContext } from './node-context.js';
import { JoinProgress } from './join-progress.js';
import { recordJoinStatus, joinStatusOf } from './join-status.js';
import type { JoinStep } from './join-steps.js';
import { writeNodeState } from './node-state.js';
import {
  checkCredential,
  checkIssuedBy,
  writeClientCredential,
  writeServingCredential,
} from './kubelet-credentials.js';
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

/** A ticket with the keys its certificates were issued for and what the platform said of the node. */
interface IssuedTicket {
  ticket: JoinTicket;
  keys: KubeletKeys;
  self: Instance;
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
  /** The steps past the lock, once a ticket came. */
  private progress: JoinProgress | undefined;

  constructor(context: NodeContext, options: JoinClientOptions) {
    this.context = context;
    this.options = options;
    this.connection = new JoinServiceConnection(context, options.requestTimeoutMs);
  }

  /** The join step under way or last begun past the ticket, for a deadline's message. */
  get step(): JoinStep | undefined {
    return this.progress?.current;
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
      let step: JoinStep = 'request-ticket';
      let failure: unknown;
      let ticket: IssuedTicket | undefined;
      try {
        const issued = await this.requestTicket();
        if (issued !== undefined) {
          step = 'check-ticket';
          this.checkTicket(issued.ticket, issued.keys);
          ticket = issued;
        }
      } catch (err) {
        failure = err;
      }
      // Outside the try: a failure after the lock is not "no ticket yet" but fatal, and the
      // caller marks the disk for reset and runs the fatal action (Constellation's PR 2971).
      // Nothing is recorded once stopped: the InitServer owns the node (and its files) then.
      if (this.running() && (ticket !== undefined || failure !== undefined)) {
        this.recording = recordJoinStatus(this.context.paths.joinStatus, joinStatusOf(attempt, step, failure));
        await this.recording;
      }
      // A ticket that arrives once stopped is not used: the node stays as it is.
      if (ticket !== undefined) return this.running() ? this.activate(ticket, attempt + 1) : 'stopped';
      const delayMs = nextAttemptDelay(attempt, failure, this.options.initialBackoffMs, this.options.maxBackoffMs);
      if (failure !== undefined) {
        const code = (failure as { code?: number }).code;
        log.info('no join ticket yet', {
          attempt,
          step,
          error: errorMessage(failure),
          retryInMs: delayMs,
          ...(code === undefined ? {} : { code: grpc.status[code] }),
        });
      }
      await this.sleep(delayMs);
    }
    return 'stopped';
  }

  /** Join step request-ticket: a ticket for fresh kubelet keys, or undefined once stopped. */
  private async requestTicket(): Promise<IssuedTicket | undefined> {
    const self = await this.context.metadata.self();
    // One CSR for the client certificate (no SANs), one for the serving certificate (the node's
    // name and IP).
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
    // What the platform said of this node goes with the ticket: read again past the lock, a
    // metadata service that blinked would fail the join after the point of no return.
    return { ticket, keys: { clientKeyPem: clientCsr.keyPem, servingKeyPem: servingCsr.keyPem }, self };
  }

  /**
   * Join step check-ticket, before the point of no return: a ticket whose certificates do not fit
   * the node's keys counts as no ticket, and a node that will not run the ticket's version stays
   * as it is while its join status says why (a refusal, as operators and mini read it).
   */
  private checkTicket(ticket: JoinTicket, keys: KubeletKeys): void {
    checkCredential('client', { certificatePem: ticket.kubeletClientCert, keyPem: keys.clientKeyPem });
    checkCredential('serving', { certificatePem: ticket.kubeletServingCert, keyPem: keys.servingKeyPem });
    // The API server is trusted by this CA alone (kubeadm's file discovery): it must be the one
    // that issued the kubelet's certificates.
    checkIssuedBy(ticket.clusterCaCert, { client: ticket.kubeletClientCert, serving: ticket.kubeletServingCert });
    const belowFloor = belowVersionFloor(ticket.kubernetesVersion, this.context.minimumKubernetesVersion);
    if (belowFloor !== undefined)
      throw new StatusError(grpc.status.FAILED_PRECONDITION, `this node refuses the join ticket: ${belowFloor}`);
  }

  /** The steps from the lock on, each named in the node's log and its join status. */
  private async activate({ ticket, keys, self }: IssuedTicket, attempts: number): Promise<JoinOutcome> {
    const { context } = this;
    const { role } = self;
    const log = context.logger.child({ component: 'join-client' });
    const steps = new JoinProgress(log, context.paths.joinStatus, attempts);
    this.progress = steps;
    const clusterId = deriveClusterId(ticket.measurementSecret, ticket.measurementSalt);
    if (!(await steps.run('lock-node', () => context.lock.tryLock(clusterId, 'join')))) {
      log.info('the InitServer owns this node; not joining', { holder: context.lock.heldBy });
      return 'stopped';
    }
    this.options.committed();
    await steps.commit();
    log.info('joining the cluster', {
      role,
      endpoint: ticket.apiServerEndpoint,
      kubernetesVersion: ticket.kubernetesVersion,
    });
    await steps.run('rekey-state-disk', () => rekeyStateDisk(context, ticket.stateDiskKey));
    await steps.run('write-credentials', () => this.writeCredentials(ticket, keys));
    const { prepareNode } = context;
    const version = ticket.kubernetesVersion;
    await steps.run(
      'prepare-node',
      () => prepareNode?.(version) ?? Promise.resolve(),
      `kubernetes ${version}${prepareNode === undefined ? ', no node preparation configured' : ''}`,
    );
    await steps.run(
      'kubeadm-join',
      async () => {
        // Loaded by a node that joins (kubeadm's configuration writer), not at every start.
        const { kubeadmJoin, kubeadmRunner } = await import('./kubeadm-driver.js');
        await kubeadmJoin(kubeadmRunner(context), {
          nodeName: self.name,
          nodeIp: self.ip,
          discovery: {
            apiServerEndpoint: ticket.apiServerEndpoint,
            caCertificatePem: ticket.clusterCaCert.toString('utf8'),
            clientCertificatePem: ticket.kubeletClientCert.toString('utf8'),
            clientKeyPem: keys.clientKeyPem,
          },
          ...(role === 'control-plane' ? { controlPlane: { bindPort: context.apiServerBindPort } } : {}),
        });
      },
      `${role} at ${ticket.apiServerEndpoint}`,
    );
    // Only now is the disk the cluster's: a node that loses power before this boots a fresh disk.
    await steps.run('write-node-state', async () => {
      await markStateDiskJoined(context, ticket.stateDiskKey, ticket.diskReceipt);
      await writeNodeState(context.disk, { role, measurementSalt: ticket.measurementSalt, clusterId });
    });
    await steps.run('start-kubelet', async () => {
      await recordKubernetesConfigured(context.paths);
      await context.startKubelet();
    });
    await steps.joined();
    log.info('joined the cluster', { clusterId: clusterId.toString('hex') });
    return 'joined';
  }

  /** The kubelet's two credentials and, for a control plane, the cluster's shared PKI files. */
  private async writeCredentials(ticket: JoinTicket, keys: KubeletKeys): Promise<void> {
    const { paths } = this.context;
    for (const file of ticket.controlPlaneFiles) {
      const path = join(paths.kubernetesPki, file.name);
      if (!path.startsWith(`${paths.kubernetesPki}/`) || file.name.includes('..'))
        throw new Error(`control-plane file name "${file.name}" escapes the PKI directory`);
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, file.data, { mode: file.name.endsWith('.key') ? 0o600 : 0o644 });
    }
    await writeServingCredential(paths, { certificatePem: ticket.kubeletServingCert, keyPem: keys.servingKeyPem });
    await writeClientCredential(paths.kubeletCertDir, {
      certificatePem: ticket.kubeletClientCert,
      keyPem: keys.clientKeyPem,
    });
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
