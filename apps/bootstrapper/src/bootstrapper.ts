import type { Logger } from '@constellation/logger';
import type { BootstrapOutcome, BootstrapperOptions } from './bootstrapper-options.js';
import { markDiskForReset } from './disk-reset.js';
import { InitOrJoin } from './init-or-join.js';
import { forgetKubernetesConfigured, isKubernetesConfigured } from './kubernetes-configured.js';
import { assessNode } from './node-assessment.js';
import type { NodeAssessment } from './node-assessment.js';
import type { NodeContext } from './node-context.js';
import { rejoin } from './rejoin.js';

export type { BootstrapOutcome, BootstrapperOptions } from './bootstrapper-options.js';

/**
 * Decides the node's path from its state and runs it:
 *  - PCR 15 already marked (this boot committed before a restart of the process): start the kubelet
 *    if that boot had configured Kubernetes, else take the fatal path;
 *  - state disk initialised: rejoin (rejoin ticket, or recovery on control planes);
 *  - otherwise: InitServer and JoinClient race for the node lock; the loser stops.
 * Past the point of no return every failure marks the state disk for reset and runs the fatal action.
 */
export class Bootstrapper {
  readonly context: NodeContext;
  private readonly options: BootstrapperOptions;

  constructor(context: NodeContext, options: BootstrapperOptions) {
    this.context = context;
    this.options = options;
  }

  /** `assessment`: where the node stands, when the caller started assessing it already (assessNode). */
  async run(assessment: Promise<NodeAssessment> = assessNode(this.context)): Promise<BootstrapOutcome> {
    const { context } = this;
    const log = context.logger.child({ component: 'bootstrapper' });
    const state = await assessment;
    if (state === 'marked') return this.restartedPastPointOfNoReturn(log);
    await forgetKubernetesConfigured(context.paths);
    if (state === 'initialized') {
      log.info('state disk belongs to a cluster: rejoining');
      return rejoin(context, {
        initialBackoffMs: this.options.joinInitialBackoffMs,
        maxBackoffMs: this.options.joinMaxBackoffMs,
        requestTimeoutMs: this.options.requestTimeoutMs,
        recovery: {
          host: this.options.initHost,
          port: this.options.recoveryPort,
          onListening: (port) => this.options.onListening?.('recovery', port),
        },
      });
    }
    return new InitOrJoin(context, this.options).run();
  }

  /**
   * PCR 15 is marked: a bootstrapper of this boot passed the point of no return and then stopped
   * (systemd restarts it). If it had configured Kubernetes, only the kubelet's start remains;
   * otherwise it died mid-way, and the node takes the fatal path as if it had failed there.
   */
  private async restartedPastPointOfNoReturn(log: Logger): Promise<BootstrapOutcome> {
    const { context } = this;
    if (await isKubernetesConfigured(context.paths)) {
      log.info('PCR 15 is already marked: this node joined a cluster during this boot; starting the kubelet');
      await context.startKubelet();
      return 'already-bootstrapped';
    }
    const error = new Error(
      "PCR 15 is marked, but this boot's bootstrapper stopped before the node's Kubernetes configuration was complete (it died or was killed past the point of no return); the node resets and reboots",
    );
    await markDiskForReset(context);
    await this.options.fatal(error);
    throw error;
  }
}
