import { errorMessage } from '@constellation/errors';
import { AttestedTlsServer } from '@constellation/atls';
import type { Logger } from '@constellation/logger';
import { InitServiceService, createGrpcServer } from '@constellation/proto';
import type { FatalAction } from './fatal-action.js';
import { initService } from './init-service.js';
import { JoinClient } from './join-client.js';
import { forgetKubernetesConfigured, isKubernetesConfigured } from './kubernetes-configured.js';
import { assessNode } from './node-assessment.js';
import type { NodeAssessment } from './node-assessment.js';
import type { NodeContext } from './node-context.js';
import { rejoin } from './rejoin.js';

export type BootstrapOutcome = 'initialized' | 'joined' | 'rejoined' | 'already-bootstrapped' | 'stopped';

export interface BootstrapperOptions {
  initHost: string;
  initPort: number;
  recoveryPort: number;
  joinInitialBackoffMs: number;
  joinMaxBackoffMs: number;
  requestTimeoutMs: number;
  fatal: FatalAction;
  /** Told the bound port of the InitServer (or RecoveryServer) once it listens. */
  onListening?: (server: 'init' | 'recovery', port: number) => void;
  /**
   * How long init or join may take once the node is locked; past it the node gives up like after
   * any other failure past the point of no return (disk marked for reset, fatal action). 20 min.
   */
  committedTimeoutMs?: number;
  /**
   * Ends a fresh node's start before the point of no return: the InitServer closes, the join
   * client stops polling (and records nothing more), and `run` resolves 'stopped'. Past the point
   * of no return it is ignored: the node joins or resets.
   */
  signal?: AbortSignal;
}

/** The fatal path's first step: the next boot formats the state disk (a failure is logged, not thrown). */
async function markDiskForReset(context: NodeContext): Promise<void> {
  try {
    await context.disk.setInitialized(false);
  } catch (err) {
    context.logger.error('could not mark the state disk for reset', { err });
  }
}

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
    return this.initOrJoin();
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

  private initOrJoin(): Promise<BootstrapOutcome> {
    const { context, options } = this;
    return new Promise<BootstrapOutcome>((resolve, reject) => {
      const grpcServer = createGrpcServer();
      const atls = new AttestedTlsServer(grpcServer, { issuer: context.issuer, logger: context.logger });
      const closeInitServer = async (): Promise<void> => {
        await atls.close();
        grpcServer.forceShutdown();
      };
      // Past the point of no return the node must end up in the cluster or reset, never hang locked.
      let deadline: NodeJS.Timeout | undefined;
      let committed = false;
      const startDeadline = (): void => {
        committed = true;
        const ms = options.committedTimeoutMs ?? 20 * 60_000;
        deadline = setTimeout(() => {
          // Past a join's lock, the step it hung in tells the operator where to look.
          const { step } = joinClient;
          fatal(
            new Error(
              `the node did not finish joining the cluster within ${ms} ms after the point of no return${step === undefined ? '' : ` (stuck in join step ${step})`}`,
            ),
          );
        }, ms);
      };
      const joinClient = new JoinClient(context, {
        initialBackoffMs: options.joinInitialBackoffMs,
        maxBackoffMs: options.joinMaxBackoffMs,
        requestTimeoutMs: options.requestTimeoutMs,
        committed: () => {
          startDeadline();
          void closeInitServer();
        },
      });
      const stop = (): void => {
        if (committed) return;
        // 'stopped' once nothing more is written: the join client's status write under way has
        // landed and the InitServer is closed.
        void Promise.all([joinClient.stop(), closeInitServer()]).then(() => {
          // An Init call in flight may have passed the point of no return meanwhile: it ends the run.
          if (!committed) resolve('stopped');
        });
      };
      let failed = false;
      const fatal = (error: Error): void => {
        if (failed) return;
        failed = true;
        clearTimeout(deadline);
        void (async () => {
          await closeInitServer(); // drains: the failure, logs and status reach the client first
          await markDiskForReset(context);
          await options.fatal(error);
          reject(error);
        })();
      };
      // A first boot's format runs while the InitServer listens; its failure ends the node's start.
      context.disk.ready().catch((err: unknown) => {
        fatal(new Error(`formatting the state disk for first boot failed: ${errorMessage(err)}`));
      });
      grpcServer.addService(
        InitServiceService,
        initService(context, {
          committed: () => {
            startDeadline();
            void joinClient.stop();
          },
          finished: (error) => {
            if (error !== undefined) {
              fatal(error);
              return;
            }
            clearTimeout(deadline);
            // Closing drains: the success message reaches the client before the server goes away.
            void closeInitServer().then(() => {
              resolve('initialized');
            });
          },
        }),
      );
      // The join client starts once the InitServer listens: its first request (loading Node's
      // HTTP client) would otherwise delay the listening by more than the listen itself takes.
      atls.listen(options.initPort, options.initHost).then(
        (port) => {
          context.logger.info('init server listening', { port });
          options.onListening?.('init', port);
          if (options.signal?.aborted === true) {
            stop();
            return;
          }
          options.signal?.addEventListener('abort', stop, { once: true });
          joinClient.run().then(
            (outcome) => {
              if (outcome !== 'joined' || failed) return;
              clearTimeout(deadline);
              resolve('joined');
            },
            (err: unknown) => {
              fatal(err instanceof Error ? err : new Error(String(err)));
            },
          );
        },
        (err: unknown) => {
          reject(err instanceof Error ? err : new Error(String(err)));
        },
      );
    });
  }
}
