import * as grpc from '@grpc/grpc-js';
import { machineIdOf } from '@constellation/attestation';
import { deriveClusterId, deriveDiskReceipt, deriveMeasurementSecret, deriveStateDiskKey } from '@constellation/keys';
import {
  NodeAddressBindings,
  NodeNameBindings,
  apiServerAltNames,
  deleteUnmintedBootstrapTokens,
  removeNodeClientBootstrapGrants,
} from '@constellation/kubeadm';
import type { InitConfigInput } from '@constellation/kubeadm';
import type { Logger } from '@constellation/logger';
import { InitStep, StatusError } from '@constellation/proto';
import type { InitRequest } from '@constellation/proto';
import { markStateDiskJoined, rekeyStateDisk } from './disk-activation.js';
import {
  adminClients,
  kubeadmInit,
  kubeadmRunner,
  publishClusterConfig,
  readAdminKubeconfig,
  waitForApiServer,
} from './kubeadm-driver.js';
import { issueFirstNodeServingCredential } from './kubelet-credentials.js';
import type { Endpoint, Instance } from './metadata-client.js';
import type { NodeContext } from './node-context.js';
import { writeNodeState } from './node-state.js';

/** How the steps report progress to the caller of Init. */
export interface StepReporter {
  begin(step: InitStep, detail?: string): void;
  done(detail?: string): void;
}

/** What the platform says of this node and its cluster, read before the point of no return. */
export interface NodeMetadata {
  self: Instance;
  endpoint: Endpoint;
}

/**
 * Derives the cluster's keys, reads the node's own metadata, takes the node lock (the point of no
 * return: `committed` is called right after), re-keys the state disk and writes the node state.
 * Returns what later steps need. Everything that can fail for a reason outside the node (a
 * metadata service that blinks or answers nonsense) is done before the lock, where a failure is
 * retry-safe instead of a disk reset and a reboot.
 */
export async function takeNode(
  context: NodeContext,
  request: InitRequest,
  report: StepReporter,
  committed: () => void,
): Promise<{ clusterId: Buffer; metadata: NodeMetadata }> {
  report.begin(InitStep.INIT_STEP_DERIVE_KEYS);
  const measurementSecret = deriveMeasurementSecret(request.masterSecret, request.masterSalt);
  const clusterId = deriveClusterId(measurementSecret, request.measurementSalt);
  const [self, endpoint] = await Promise.all([context.metadata.self(), context.metadata.endpoint()]);
  const metadata = { self, endpoint };
  report.done();

  report.begin(InitStep.INIT_STEP_LOCK_NODE);
  if (!(await context.lock.tryLock(clusterId, 'init')))
    throw new StatusError(
      grpc.status.FAILED_PRECONDITION,
      `node is already taken by ${context.lock.heldBy ?? 'another path'}`,
    );
  committed();
  report.done('point of no return passed');

  report.begin(InitStep.INIT_STEP_REKEY_STATE_DISK);
  const diskUuid = await context.disk.uuid();
  // This node joins by init, not through the JoinService: it makes the receipt a join ticket would
  // carry, so that it gets a rejoin ticket after a reboot.
  const diskKey = deriveStateDiskKey(
    request.masterSecret,
    request.masterSalt,
    diskUuid,
    context.issuer.rooted?.ekPublicKeyHash,
  );
  await rekeyStateDisk(context, diskKey);
  await markStateDiskJoined(
    context,
    diskKey,
    deriveDiskReceipt(request.masterSecret, request.masterSalt, diskUuid, await machineIdOf(context.issuer)),
  );
  report.done();

  report.begin(InitStep.INIT_STEP_WRITE_NODE_STATE);
  await writeNodeState(context.disk, {
    role: 'control-plane',
    measurementSalt: request.measurementSalt,
    clusterId,
  });
  report.done();
  return { clusterId, metadata };
}

/**
 * Node preparation, `kubeadm init`, the API server up, kubeadm's own token removed, the cluster
 * configuration and (bare metal) this node's name and address recorded; returns the admin kubeconfig.
 */
export async function bootstrapKubernetes(
  context: NodeContext,
  request: InitRequest,
  { self, endpoint }: NodeMetadata,
  report: StepReporter,
  log: Logger,
): Promise<{ kubeconfig: Buffer; version: string }> {
  const version = request.kubernetesVersion === '' ? context.defaultKubernetesVersion : request.kubernetesVersion;
  report.begin(InitStep.INIT_STEP_PREPARE_NODE, `kubernetes ${version}`);
  if (context.prepareNode === undefined) {
    report.done('no node preparation configured');
  } else {
    await context.prepareNode(version);
    report.done('components verified and installed');
  }

  report.begin(InitStep.INIT_STEP_KUBEADM_INIT, `kubernetes ${version}`);
  // The kubelet kubeadm starts needs its serving certificate already (cluster CA made here).
  await issueFirstNodeServingCredential(context.paths, self);
  const kubeadmInput: InitConfigInput = {
    nodeName: self.name,
    nodeIp: self.ip,
    bindPort: context.apiServerBindPort,
    clusterName: request.clusterName === '' ? 'constellation' : request.clusterName,
    kubernetesVersion: version,
    controlPlaneEndpoint: `${endpoint.host}:${endpoint.apiServerPort}`,
    certSans: request.apiserverCertSans,
    ...(request.serviceCidr === '' ? {} : { serviceCidr: request.serviceCidr }),
    kubeProxy: request.conformanceMode,
  };
  await kubeadmInit(kubeadmRunner(context), kubeadmInput);
  // The node image's kube-proxy settings apply only to a cluster that runs kube-proxy: say so
  // rather than drop them silently.
  const unusedKubeProxyConfig = !request.conformanceMode && context.kubeadm.node?.kubeProxy !== undefined;
  if (unusedKubeProxyConfig)
    log.info('--kube-proxy-config not used: this cluster runs no kube-proxy (init --conformance turns it on)');
  report.done(
    request.conformanceMode
      ? 'with kube-proxy'
      : `without kube-proxy${unusedKubeProxyConfig ? "; the node image's --kube-proxy-config is not used" : ''}`,
  );

  report.begin(InitStep.INIT_STEP_WAIT_FOR_API_SERVER);
  const { core, rbac } = await adminClients(context.paths.adminConf);
  await waitForApiServer(core, 120_000);
  // kubeadm always makes a bootstrap token at init; none may outlive it that the JoinService
  // did not mint for an attested node.
  const removed = await deleteUnmintedBootstrapTokens(core);
  log.info('removed the bootstrap tokens kubeadm init made', { count: removed.length });
  // Tickets carry the kubelet client certificate: no token needs the kubelet's TLS bootstrap, whose
  // auto-approval would sign a client certificate for any node name (red-team finding).
  const revoked = await removeNodeClientBootstrapGrants(rbac);
  log.info("removed kubeadm's kubelet TLS bootstrap grants for bootstrap tokens", { bindings: revoked });
  report.done();

  report.begin(InitStep.INIT_STEP_PUBLISH_CLUSTER_CONFIG);
  // What the API server's certificate names goes with it: the JoinService gives no worker a
  // kubelet serving certificate that names any of it.
  await publishClusterConfig(core, {
    kubernetesVersion: version,
    components: request.kubernetesComponents,
    apiServer: apiServerAltNames(kubeadmInput),
  });
  // This node joined by init, not through the JoinService: with a proven identity, record its name
  // and address as a bare-metal join would, so that no machine joining later takes them.
  const machine = await machineIdOf(context.issuer);
  if (context.issuer.rooted !== undefined) {
    await new NodeNameBindings({ core }).bind(self.name, machine);
    await new NodeAddressBindings({ core }).bind([self.ip], self.name, machine);
  }
  report.done();

  report.begin(InitStep.INIT_STEP_ISSUE_ADMIN_KUBECONFIG);
  const kubeconfig = await readAdminKubeconfig(context.paths.adminConf);
  report.done();
  return { kubeconfig, version };
}
