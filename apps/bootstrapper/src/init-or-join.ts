import { errorMessage } from '@constellation/errors';
import { AttestedTlsServer } from '@constellation/atls';
import { InitServiceService, createGrpcServer } from '@constellation/proto';
import type { Server } from '@grpc/grpc-js';
import type { BootstrapOutcome, BootstrapperOptions } from './bootstrapper-options.js';
import { markDiskForReset } from './disk-reset.js';
import { initService } from './init-service.js';
import { JoinClient } from './join-client.js';
import type { NodeContext } from './node-context.js';

const toError = (err: unknown): Error => (err instanceof Error ? err : new Error(String(err)));

/**
 * A fresh node: the InitServer and the JoinClient race for the node lock. The moment one takes
 * it, the other stops. Past that point of no return the node must end up in the cluster or reset,
 * never hang locked: every failure, and a deadline, take the fatal path (state disk marked for
 * reset, the fatal action).
 */
export class InitOrJoin {
  private readonly grpcServer: Server = createGrpcServer();
  private readonly atls: AttestedTlsServer;
  private readonly joinClient: JoinClient;
  private deadline: NodeJS.Timeout | undefined;
  private committed = false;
  private failed = false;
  private settle: { resolve: (outcome: BootstrapOutcome) => void; reject: (error: Error) => void } | undefined;
  private readonly context: NodeContext;
  private readonly options: BootstrapperOptions;

  constructor(context: NodeContext, options: BootstrapperOptions) {
    this.context = context;
    this.options = options;
    this.atls = new AttestedTlsServer(this.grpcServer, { issuer: context.issuer, logger: context.logger });
    this.joinClient = new JoinClient(context, {
      initialBackoffMs: options.joinInitialBackoffMs,
      maxBackoffMs: options.joinMaxBackoffMs,
      requestTimeoutMs: options.requestTimeoutMs,
      committed: () => {
        this.startDeadline();
        void this.closeInitServer();
      },
    });
  }

  run(): Promise<BootstrapOutcome> {
    const { context } = this;
    return new Promise<BootstrapOutcome>((resolve, reject) => {
      this.settle = { resolve, reject };
      // A first boot's format runs while the InitServer listens; its failure ends the node's start.
      context.disk.ready().catch((err: unknown) => {
        this.fatal(new Error(`formatting the state disk for first boot failed: ${errorMessage(err)}`));
      });
      this.grpcServer.addService(
        InitServiceService,
        initService(context, {
          committed: () => {
            this.startDeadline();
            void this.joinClient.stop();
          },
          finished: (error) => {
            this.initFinished(error);
          },
        }),
      );
      this.atls.listen(this.options.initPort, this.options.initHost).then(
        (port) => {
          this.listening(port);
        },
        (err: unknown) => {
          reject(toError(err));
        },
      );
    });
  }

  /**
   * The InitServer listens: the join client starts now, as its first request (loading Node's
   * HTTP client) would otherwise delay the listening by more than the listen itself takes.
   */
  private listening(port: number): void {
    const { options } = this;
    this.context.logger.info('init server listening', { port });
    options.onListening?.('init', port);
    if (options.signal?.aborted === true) {
      this.stop();
      return;
    }
    options.signal?.addEventListener(
      'abort',
      () => {
        this.stop();
      },
      { once: true },
    );
    this.joinClient.run().then(
      (outcome) => {
        if (outcome !== 'joined' || this.failed) return;
        clearTimeout(this.deadline);
        this.settle?.resolve('joined');
      },
      (err: unknown) => {
        this.fatal(toError(err));
      },
    );
  }

  private async closeInitServer(): Promise<void> {
    await this.atls.close();
    this.grpcServer.forceShutdown();
  }

  /** A path took the lock: from now on it finishes within the deadline, or the node resets. */
  private startDeadline(): void {
    this.committed = true;
    const ms = this.options.committedTimeoutMs ?? 20 * 60_000;
    this.deadline = setTimeout(() => {
      // Past a join's lock, the step it hung in tells the operator where to look.
      const { step } = this.joinClient;
      this.fatal(
        new Error(
          `the node did not finish joining the cluster within ${String(ms)} ms after the point of no return${step === undefined ? '' : ` (stuck in join step ${step})`}`,
        ),
      );
    }, ms);
  }

  /** The signal aborted: before the point of no return both paths stop; past it, nothing changes. */
  private stop(): void {
    if (this.committed) return;
    // 'stopped' once nothing more is written: the join client's status write under way has
    // landed and the InitServer is closed.
    void Promise.all([this.joinClient.stop(), this.closeInitServer()]).then(() => {
      // An Init call in flight may have passed the point of no return meanwhile: it ends the run.
      if (!this.committed) this.settle?.resolve('stopped');
    });
  }

  /** A committed Init ended: with its outcome, or with the fatal path. */
  private initFinished(error: Error | undefined): void {
    if (error !== undefined) {
      this.fatal(error);
      return;
    }
    clearTimeout(this.deadline);
    // Closing drains: the success message reaches the client before the server goes away.
    void this.closeInitServer().then(() => {
      this.settle?.resolve('initialized');
    });
  }

  private fatal(error: Error): void {
    if (this.failed) return;
    this.failed = true;
    clearTimeout(this.deadline);
    void (async () => {
      await this.closeInitServer(); // drains: the failure, logs and status reach the client first
      await markDiskForReset(this.context);
      await this.options.fatal(error);
      this.settle?.reject(error);
    })();
  }
}
