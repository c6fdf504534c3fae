import * as grpc from '@grpc/grpc-js';
import { errorMessage } from '@constellation/errors';
import { InitStep, StepState, statusErrorOf } from '@constellation/proto';
import type { InitServiceServer } from '@constellation/proto';
import { InitAdmission } from './init-admission.js';
import type { InitCall as Call } from './init-admission.js';
import { recordKubernetesConfigured } from './kubernetes-configured.js';
import type { StepReporter } from './init-steps.js';
import type { NodeContext } from './node-context.js';

export interface InitServiceHooks {
  /** Called once the lock is taken: the other path must stop. */
  committed: () => void;
  /** Called when a committed Init finished: resolved with the outcome. */
  finished: (error: Error | undefined) => void;
}

const LOG_CHUNK = 16 * 1024;

/**
 * The InitServer's `Init`. Before the node lock every failure is retry-safe: the node stays
 * unlocked and keeps serving. After it, a failure is reported with `retry_safe = false` and the
 * caller marks the disk for reset and reboots. Logs go only to callers that passed the
 * init-secret check.
 */
export function initService(context: NodeContext, hooks: InitServiceHooks): InitServiceServer {
  let busy = false;
  const log = context.logger.child({ component: 'init-server' });
  const admission = new InitAdmission(context, log);

  async function run(call: Call): Promise<void> {
    const started = Date.now();
    const fail = (code: grpc.status, message: string, metadata?: grpc.Metadata): void => {
      call.emit('error', { code, details: message, ...(metadata === undefined ? {} : { metadata }) });
    };
    const refused = await admission.refusal(call, () => busy);
    if (refused !== undefined) {
      fail(...refused);
      return;
    }
    busy = true;
    log.info('init started', { peer: call.getPeer() });
    let step = InitStep.INIT_STEP_CHECK_INIT_SECRET;
    // An object, not a let: the point of no return is passed inside takeNode's callback.
    const lock = { committed: false };
    const progress = (state: StepState, detail = ''): void => {
      call.write({ kind: { $case: 'progress', value: { step, state, detail, elapsedMs: Date.now() - started } } });
    };
    const report: StepReporter = {
      begin: (next, detail = '') => {
        step = next;
        progress(StepState.STEP_STATE_STARTED, detail);
      },
      done: (detail = '') => {
        progress(StepState.STEP_STATE_SUCCEEDED, detail);
      },
    };
    try {
      report.done();
      // Loaded by the node that is initialised (kubeadm, the cluster's keys), not at every start.
      const { bootstrapKubernetes, takeNode } = await import('./init-steps.js');
      const { clusterId, metadata } = await takeNode(context, call.request, report, () => {
        lock.committed = true;
        hooks.committed();
      });
      const { kubeconfig, version } = await bootstrapKubernetes(context, call.request, metadata, report, log);
      await recordKubernetesConfigured(context.paths);
      await context.startKubelet();
      call.write({ kind: { $case: 'success', value: { kubeconfig, clusterId, kubernetesVersion: version } } });
      call.end();
      log.info('init finished', { clusterId: clusterId.toString('hex'), elapsedMs: Date.now() - started });
      hooks.finished(undefined);
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err));
      const status = statusErrorOf(err);
      const message = status?.message ?? `${InitStep[step]} failed: ${error.message}`;
      log.error('init failed', { step: InitStep[step], retrySafe: !lock.committed, err: error });
      progress(StepState.STEP_STATE_FAILED, message);
      call.write({ kind: { $case: 'failure', value: { error: message, step, retrySafe: !lock.committed } } });
      await sendLogs(call, context);
      fail(status?.code ?? grpc.status.INTERNAL, message);
      if (lock.committed) hooks.finished(error);
      else busy = false;
    }
  }

  return {
    init: (call: Call) => {
      void run(call).catch((err: unknown) => {
        log.error('init handler crashed', { err });
      });
    },
  };
}

async function sendLogs(call: Call, context: NodeContext): Promise<void> {
  let sent = 0;
  let collectionError = '';
  try {
    const logs = context.recentLog.snapshot();
    for (let offset = 0; offset < logs.length; offset += LOG_CHUNK) {
      const data = logs.subarray(offset, offset + LOG_CHUNK);
      call.write({ kind: { $case: 'log', value: { data } } });
      sent += data.length;
    }
  } catch (err) {
    collectionError = errorMessage(err);
  }
  await Promise.resolve();
  call.write({ kind: { $case: 'logsDone', value: { bytesSent: sent, collectionError } } });
}
