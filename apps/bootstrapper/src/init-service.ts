import * as grpc from '@grpc/grpc-js';
import { StatusError, statusErrorOf } from '@constellation/proto';
import { deriveClusterId, deriveMeasurementSecret, deriveStateDiskKey, verifyInitSecret } from '@constellation/keys';
import { DiskBindings, deleteUnmintedBootstrapTokens } from '@constellation/kubeadm';
import { InitStep, StepState } from '@constellation/proto';
import type { InitRequest, InitResponse, InitServiceServer } from '@constellation/proto';
import { checkInitRequest } from './init-request.js';
import {
  adminClient,
  kubeadmInit,
  kubeadmRunner,
  publishClusterConfig,
  readAdminKubeconfig,
  waitForApiServer,
} from './kubeadm-driver.js';
import { rekeyStateDisk } from './disk-activation.js';
import { issueFirstNodeServingCredential } from './kubelet-credentials.js';
import type { NodeContext } from './node-context.js';
import { writeNodeState } from './node-state.js';
import { errorMessage } from '@constellation/errors';

type Call = grpc.ServerWritableStream<InitRequest, InitResponse>;

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

  return {
    init: (call: Call) => {
      void run(call).catch((err: unknown) => {
        log.error('init handler crashed', { err });
      });
    },
  };

  async function run(call: Call): Promise<void> {
    const started = Date.now();
    const request = call.request;
    const holder = (): string => context.lock.heldBy ?? 'another path';
    const fail = (code: grpc.status, message: string): void => {
      call.emit('error', { code, details: message });
    };
    try {
      checkInitRequest(request);
    } catch (err) {
      const status = statusErrorOf(err);
      if (status !== undefined) {
        fail(status.code, status.message);
        return;
      }
      throw err;
    }
    let hash: string;
    try {
      hash = await context.metadata.initSecretHash();
    } catch (err) {
      fail(grpc.status.UNAVAILABLE, `cannot check the init secret: ${errorMessage(err)}`);
      return;
    }
    if (!(await verifyInitSecret(request.initSecret, hash))) {
      log.warn('init refused: wrong init secret', { peer: call.getPeer() });
      fail(grpc.status.PERMISSION_DENIED, 'wrong init secret');
      return;
    }
    if (busy) {
      fail(grpc.status.FAILED_PRECONDITION, 'node is already being initialised');
      return;
    }
    if (context.lock.heldBy !== undefined) {
      fail(grpc.status.FAILED_PRECONDITION, `node is already taken by ${context.lock.heldBy}`);
      return;
    }
    busy = true;
    log.info('init started', { peer: call.getPeer() });

    let step = InitStep.INIT_STEP_CHECK_INIT_SECRET;
    let committed = false;
    const progress = (state: StepState, detail = ''): void => {
      call.write({ kind: { $case: 'progress', value: { step, state, detail, elapsedMs: Date.now() - started } } });
    };
    const begin = (next: InitStep, detail = ''): void => {
      step = next;
      progress(StepState.STEP_STATE_STARTED, detail);
    };
    try {
      progress(StepState.STEP_STATE_SUCCEEDED);
      begin(InitStep.INIT_STEP_DERIVE_KEYS);
      const measurementSecret = deriveMeasurementSecret(request.masterSecret, request.masterSalt);
      const clusterId = deriveClusterId(measurementSecret, request.measurementSalt);
      progress(StepState.STEP_STATE_SUCCEEDED);

      begin(InitStep.INIT_STEP_LOCK_NODE);
      if (!(await context.lock.tryLock(clusterId, 'init')))
        throw new StatusError(grpc.status.FAILED_PRECONDITION, `node is already taken by ${holder()}`);
      committed = true;
      hooks.committed();
      progress(StepState.STEP_STATE_SUCCEEDED, 'point of no return passed');

      begin(InitStep.INIT_STEP_REKEY_STATE_DISK);
      const diskUuid = await context.disk.uuid();
      await rekeyStateDisk(
        context,
        deriveStateDiskKey(request.masterSecret, request.masterSalt, diskUuid, context.issuer.rooted?.ekPublicKeyHash),
      );
      progress(StepState.STEP_STATE_SUCCEEDED);

      begin(InitStep.INIT_STEP_WRITE_NODE_STATE);
      await writeNodeState(context.paths.nodeState, {
        role: 'control-plane',
        measurementSalt: request.measurementSalt,
        clusterId,
      });
      progress(StepState.STEP_STATE_SUCCEEDED);

      const self = await context.metadata.self();
      const endpoint = await context.metadata.endpoint();
      const version = request.kubernetesVersion === '' ? context.defaultKubernetesVersion : request.kubernetesVersion;
      begin(InitStep.INIT_STEP_PREPARE_NODE, `kubernetes ${version}`);
      if (context.prepareNode === undefined) {
        progress(StepState.STEP_STATE_SUCCEEDED, 'no node preparation configured');
      } else {
        await context.prepareNode(version);
        progress(StepState.STEP_STATE_SUCCEEDED, 'components verified and installed');
      }
      begin(InitStep.INIT_STEP_KUBEADM_INIT, `kubernetes ${version}`);
      // The kubelet kubeadm starts needs its serving certificate already (cluster CA made here).
      await issueFirstNodeServingCredential(context.paths, self);
      await kubeadmInit(kubeadmRunner(context), {
        nodeName: self.name,
        nodeIp: self.ip,
        bindPort: context.apiServerBindPort,
        clusterName: request.clusterName === '' ? 'constellation' : request.clusterName,
        kubernetesVersion: version,
        controlPlaneEndpoint: `${endpoint.host}:${endpoint.apiServerPort}`,
        certSans: request.apiserverCertSans,
        ...(request.serviceCidr === '' ? {} : { serviceCidr: request.serviceCidr }),
        kubeProxy: request.conformanceMode,
      });
      progress(StepState.STEP_STATE_SUCCEEDED);

      begin(InitStep.INIT_STEP_WAIT_FOR_API_SERVER);
      const core = await adminClient(context.paths.adminConf);
      await waitForApiServer(core, 120_000);
      // kubeadm always makes a bootstrap token at init; none may outlive it that the JoinService
      // did not mint for an attested node.
      const removed = await deleteUnmintedBootstrapTokens(core);
      log.info('removed the bootstrap tokens kubeadm init made', { count: removed.length });
      progress(StepState.STEP_STATE_SUCCEEDED);

      begin(InitStep.INIT_STEP_PUBLISH_CLUSTER_CONFIG);
      await publishClusterConfig(core, { kubernetesVersion: version, components: request.kubernetesComponents });
      // This node joined by init, not through the JoinService: record its (machine, disk) pair as a
      // join would, so that it gets a rejoin ticket after a reboot.
      const machine = context.issuer.rooted?.ekPublicKeyHash;
      if (machine !== undefined) await new DiskBindings({ core }).bind(diskUuid, machine, self.name);
      progress(StepState.STEP_STATE_SUCCEEDED);

      begin(InitStep.INIT_STEP_ISSUE_ADMIN_KUBECONFIG);
      const kubeconfig = await readAdminKubeconfig(context.paths.adminConf);
      progress(StepState.STEP_STATE_SUCCEEDED);
      await context.startKubelet();

      call.write({ kind: { $case: 'success', value: { kubeconfig, clusterId, kubernetesVersion: version } } });
      call.end();
      log.info('init finished', { clusterId: clusterId.toString('hex'), elapsedMs: Date.now() - started });
      hooks.finished(undefined);
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err));
      const status = statusErrorOf(err);
      const message = status?.message ?? `${InitStep[step]} failed: ${error.message}`;
      log.error('init failed', { step: InitStep[step], retrySafe: !committed, err: error });
      progress(StepState.STEP_STATE_FAILED, message);
      call.write({ kind: { $case: 'failure', value: { error: message, step, retrySafe: !committed } } });
      await sendLogs(call, context);
      fail(status?.code ?? grpc.status.INTERNAL, message);
      if (committed) hooks.finished(error);
      else busy = false;
    }
  }
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
