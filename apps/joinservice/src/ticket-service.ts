import {
  CsrError,
  deriveDiskReceipt,
  deriveMeasurementSecret,
  deriveStateDiskKey,
  isDiskReceipt,
} from '@constellation/keys';
import type { IssuedKubeletCertificate, MasterSecret } from '@constellation/keys';
import type { Logger } from '@constellation/logger';
import type { JoinTicket, JoinTicketRequest, RejoinTicket, RejoinTicketRequest } from '@constellation/proto';
import { refuseApiServerNames } from './api-server-names.js';
import type { ClusterConfigCache } from './cluster-config-cache.js';
import type { ClusterPki } from './cluster-pki.js';
import { JOINSERVICE_DEFAULTS } from './config.js';
import type { ControlPlaneLease } from './control-plane-lease.js';
import { apiErrorMessage, apiStatusCode } from '@constellation/kubeadm';
import type { DiskBindings, NodeAddressBindings, NodeNameBindings } from '@constellation/kubeadm';
import type { RegisteredInstance } from './instance-registry.js';
import type { TicketBudget } from './ticket-budget.js';
import { Refusal } from '@constellation/errors';

/**
 * Who the JoinService is talking to, as far as attestation established it. `machineId` names the
 * TPM (the EK hash for rooted variants); `instance` is the platform's record of the machine, and
 * absent only where no registry exists (bare metal, an explicit configuration switch).
 */
export interface AdmittedNode {
  machineId: string;
  /** The proven EK's hash (rooted variants): disk keys are derived for this machine only. */
  ekPublicKeyHash?: string;
  instance?: RegisteredInstance;
  /**
   * A rooted machine admitted without a registry (bare metal): whether `--control-plane-eks` lists
   * it, the only way it may join as a control plane, and how many machines the list names.
   */
  unregistered?: { mayJoinAsControlPlane: boolean; listedControlPlanes: number };
}

export interface TicketServiceOptions {
  /** The cluster configuration ConfigMap (Kubernetes version, components), briefly cached. */
  clusterConfig: ClusterConfigCache;
  pki: ClusterPki;
  masterSecret: MasterSecret;
  measurementSalt: Buffer;
  /** host:port nodes join through (the API server or its load balancer). */
  apiServerEndpoint: string;
  lease: ControlPlaneLease;
  /** Records of (disk, machine) pairs earlier versions wrote at every join: for rejoins without a receipt. */
  disks: DiskBindings;
  /** Bare metal: which machine each node name belongs to (a registry names machines elsewhere). */
  names: NodeNameBindings;
  /** Bare metal: which machine each address in a kubelet serving certificate belongs to. */
  addresses: NodeAddressBindings;
  /** Tickets per machine; a node asking beyond it is told when to come back. */
  budget: TicketBudget;
  logger: Logger;
}

const DISK_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function checkDiskUuid(uuid: string): void {
  if (!DISK_UUID.test(uuid)) {
    throw new Refusal(
      'invalid-request',
      'disk',
      `disk_uuid must be a lower-case UUID, got ${JSON.stringify(uuid.slice(0, 64))}`,
    );
  }
}

/**
 * The kubelet's two certificates, each with its Kubernetes signer profile, for the registered
 * machine (kubelet-csr-checks.ts in @constellation/keys). A request the CA refuses is refused
 * naming which one and why; without a registry both must at least name the same node.
 */
async function issueKubeletCertificates(
  pki: ClusterPki,
  request: JoinTicketRequest,
  registered: RegisteredInstance | undefined,
): Promise<{ client: IssuedKubeletCertificate; serving: IssuedKubeletCertificate }> {
  const identity = registered === undefined ? undefined : { name: registered.name, ips: registered.ips };
  const issue = async (
    which: 'client' | 'serving',
    sign: () => Promise<IssuedKubeletCertificate>,
  ): Promise<IssuedKubeletCertificate> => {
    try {
      return await sign();
    } catch (err) {
      if (err instanceof CsrError)
        throw new Refusal('invalid-request', 'csr', `kubelet ${which} certificate request refused: ${err.message}`);
      throw err;
    }
  };
  const client = await issue('client', () =>
    pki.ca.issueKubeletClientCertificate(request.kubeletClientCertificateRequest, identity),
  );
  const serving = await issue('serving', () =>
    pki.ca.issueKubeletServingCertificate(request.kubeletServingCertificateRequest, identity),
  );
  if (client.nodeName !== serving.nodeName) {
    throw new Refusal(
      'invalid-request',
      'csr',
      `kubelet certificate requests name two nodes: client "${client.nodeName}", serving "${serving.nodeName}"`,
    );
  }
  return { client, serving };
}

/**
 * The role a node may join as: the one the registry records, or on bare metal a worker unless
 * `--control-plane-eks` lists the machine (a control plane receives the cluster CA keys).
 */
function checkRole(request: JoinTicketRequest, node: AdmittedNode): void {
  const { instance: registered, unregistered } = node;
  if (registered !== undefined && (registered.role === 'control-plane') !== request.isControlPlane) {
    throw new Refusal(
      'denied',
      'role',
      `machine "${registered.name}" is registered as ${registered.role === 'control-plane' ? 'a control-plane node' : 'a worker'} but asked to join as ${request.isControlPlane ? 'a control-plane node' : 'a worker'}`,
    );
  }
  if (unregistered !== undefined && request.isControlPlane && !unregistered.mayJoinAsControlPlane) {
    const listed = unregistered.listedControlPlanes;
    throw new Refusal(
      'denied',
      'role',
      `machine sha256:${node.machineId} asked to join as a control-plane node, which receives the cluster CA keys; without an instance registry only machines listed in --control-plane-eks may (${listed === 0 ? 'no list given' : `${listed} listed`})`,
    );
  }
}

/**
 * Builds tickets for attested nodes. Everything that can be refused is checked before anything
 * is written: a forged CSR or a bad disk UUID never leaves a claim behind in the API. A worker's
 * ticket writes nothing at all: it carries the kubelet's certificates and the cluster CA, with
 * which the node joins through kubeadm's file discovery (no bootstrap token).
 */
export class TicketService {
  private readonly options: TicketServiceOptions;
  /** The same for every ticket: derived once (an HKDF per ticket showed in the profile). */
  private readonly measurementSecret: Buffer;

  constructor(options: TicketServiceOptions) {
    this.options = options;
    this.measurementSecret = deriveMeasurementSecret(options.masterSecret.key, options.masterSecret.salt);
  }

  async joinTicket(request: JoinTicketRequest, node: AdmittedNode): Promise<JoinTicket> {
    const { pki, masterSecret, clusterConfig, lease, logger, names, addresses, budget } = this.options;
    checkDiskUuid(request.diskUuid);
    const { instance: registered, unregistered } = node;
    budget.take(`join:${node.machineId}`, `machine ${registered?.name ?? node.machineId}`);
    checkRole(request, node);
    const { client, serving } = await issueKubeletCertificates(pki, request, registered);
    const role = request.isControlPlane ? 'control-plane' : 'worker';
    const log = logger.child({ node: client.nodeName, role, diskUuid: request.diskUuid, machine: node.machineId });
    let cluster;
    try {
      cluster = await clusterConfig.get();
    } catch (err) {
      // Absent: the cluster is not initialised yet. Anything else (a timeout, a 5xx): try again soon.
      const absent = apiStatusCode(err) === 404;
      throw new Refusal(
        absent ? 'precondition' : 'unavailable',
        absent ? 'cluster-config-unavailable' : 'api-unavailable',
        `cluster configuration is not available${absent ? ' yet' : ''}: ${apiErrorMessage(err)}`,
        absent ? {} : { retryAfterMs: JOINSERVICE_DEFAULTS.apiRetryAfterMs, cause: err },
      );
    }
    if (!request.isControlPlane)
      refuseApiServerNames(client.nodeName, serving.ips, cluster.apiServer, this.options.apiServerEndpoint);
    // Without a registry the machine's name and addresses are its own word: each goes to the first
    // machine that claims it. Both are checked before either is written, so a refused ask claims
    // nothing.
    if (unregistered !== undefined) {
      const checked = await addresses.check(serving.ips, node.machineId);
      await names.bind(client.nodeName, node.machineId);
      await addresses.record(checked, client.nodeName);
    }
    if (request.isControlPlane) {
      try {
        await lease.acquire(client.nodeName);
      } catch (err) {
        budget.giveBack(`join:${node.machineId}`);
        throw err;
      }
    }
    try {
      const controlPlaneFiles = request.isControlPlane ? await pki.controlPlaneFiles() : [];
      log.info('join ticket issued', { ips: serving.ips });
      return {
        stateDiskKey: deriveStateDiskKey(masterSecret.key, masterSecret.salt, request.diskUuid, node.ekPublicKeyHash),
        measurementSalt: this.options.measurementSalt,
        measurementSecret: Buffer.from(this.measurementSecret),
        apiServerEndpoint: this.options.apiServerEndpoint,
        controlPlaneFiles,
        kubernetesVersion: cluster.kubernetesVersion,
        kubernetesComponents: cluster.components,
        kubeletClientCert: Buffer.from(client.certificatePem),
        kubeletServingCert: Buffer.from(serving.certificatePem),
        diskReceipt: deriveDiskReceipt(masterSecret.key, masterSecret.salt, request.diskUuid, node.machineId),
        clusterCaCert: Buffer.from(pki.caCertificatePem),
      };
    } catch (err) {
      if (request.isControlPlane) await lease.release(client.nodeName).catch(() => undefined);
      throw err;
    }
  }

  async rejoinTicket(request: RejoinTicketRequest, node: AdmittedNode): Promise<RejoinTicket> {
    checkDiskUuid(request.diskUuid);
    const { masterSecret, disks, budget } = this.options;
    budget.take(`rejoin:${node.machineId}`, `machine ${node.instance?.name ?? node.machineId}`);
    if (request.diskReceipt.length === 0) await disks.check(request.diskUuid, node.machineId);
    else if (
      !isDiskReceipt(request.diskReceipt, masterSecret.key, masterSecret.salt, request.diskUuid, node.machineId)
    ) {
      throw new Refusal(
        'denied',
        'disk',
        `the disk receipt shown is not this machine's for state disk ${request.diskUuid}; a rejoin ticket is only given for a disk the machine joined with (its join ticket's receipt, kept in the disk's LUKS2 header)`,
      );
    }
    this.options.logger.info('rejoin ticket issued', {
      diskUuid: request.diskUuid,
      node: node.instance?.name,
      proof: request.diskReceipt.length === 0 ? 'record' : 'receipt',
    });
    return {
      stateDiskKey: deriveStateDiskKey(masterSecret.key, masterSecret.salt, request.diskUuid, node.ekPublicKeyHash),
      measurementSecret: Buffer.from(this.measurementSecret),
      measurementSalt: this.options.measurementSalt,
    };
  }
}
