// Test fixture: a JoinService with its mounted files, the real control plane (its own, with the
// service's production RBAC), and simulated nodes that each have a real swtpm. Used by the
// JoinService tests and benchmarks.
import { randomBytes, randomUUID } from 'node:crypto';
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type * as grpc from '@grpc/grpc-js';
import {
  CHALLENGE_PROTOCOL_VERSION,
  SERVICE_CHANNEL_OPTIONS,
  requestWithAttestation,
  serviceChannelCredentials,
} from '@constellation/atls';
import {
  TpmIssuer,
  componentDigest,
  pemCertificatesToDer,
  expectedMeasurements,
  measureBoot,
  measurementsToFile,
} from '@constellation/attestation';
import type { BootComponent, Measurements } from '@constellation/attestation';
import { createKubeletCsr, generateMasterSecret, masterSecretToJson } from '@constellation/keys';
import type { MasterSecret } from '@constellation/keys';
import type { ClusterConfig } from '@constellation/kubeadm';
import type { Logger } from '@constellation/logger';
import {
  JoinServiceClient,
  JoinTicket,
  JoinTicketRequest,
  RejoinTicket,
  RejoinTicketRequest,
} from '@constellation/proto';
import type { IssueJoinTicketRequest } from '@constellation/proto';
import { MetadataServer } from '@constellation/instance-metadata';
import type { InstanceInfo } from '@constellation/instance-metadata';
import { createEkCa } from '@constellation/swtpm';
import type { EkCa } from '@constellation/swtpm';
import { createTempDir, startSwtpm } from '@constellation/testing';
import type { Swtpm, TempDir } from '@constellation/testing';
import { SocketTransport, Tpm } from '@constellation/tpm';
import { startJoinServiceCluster } from './join-service-cluster.fixture.js';
import type { JoinServiceCluster } from './join-service-cluster.fixture.js';
import { startJoinService } from './join-service.js';
import type { JoinServiceSettings } from './config.js';
import type { RunningJoinService } from './join-service.js';

export const BOOT: BootComponent[] = [
  { pcr: 4, description: 'kernel', digest: componentDigest('kernel v1') },
  { pcr: 9, description: 'bootstrapper bundle', digest: componentDigest('bootstrapper bundle v1') },
];
export const MEASURED_PCRS = [4, 9, 15];
export const CLUSTER: ClusterConfig = {
  kubernetesVersion: 'v1.32.9',
  components: [
    {
      url: 'https://example.invalid/kubelet',
      hash: `sha256:${'ab'.repeat(32)}`,
      installPath: '/run/state/bin/kubelet',
      extract: false,
    },
  ],
};

export interface JoinFixture {
  dir: TempDir;
  /** The real control plane the service works against, set up as init sets it up. */
  cluster: JoinServiceCluster;
  /** The per-cluster EK CA that manufactures every simulated node's TPM. */
  ekCa: EkCa;
  /** The platform's instance registry (mini's metadata service). */
  registry: MetadataServer;
  service: RunningJoinService;
  settings: JoinServiceSettings;
  masterSecret: MasterSecret;
  measurementSalt: Buffer;
  caCertificatePem: string;
  client: JoinServiceClient;
  writeMeasurements(m: Measurements | string): Promise<void>;
  /**
   * Boots a simulated node whose TPM is manufactured by `ekCa`, and registers it (unless
   * `registered` is false) with its name, IP and role (control-plane when the name says so).
   */
  node(
    name: string,
    ip: string,
    options?: { role?: 'control-plane' | 'worker'; boot?: readonly BootComponent[]; registered?: boolean },
  ): Promise<SimulatedNode>;
  close(): Promise<void>;
}

/**
 * Writes the files the DaemonSet mounts into `root` and returns their settings: the host's pki
 * is the control plane's own (`cluster.pkiDir`), the kubeconfig holds the join-service
 * ServiceAccount's token for `server` (the API server unless a relay or proxy stands in front).
 */
export async function writeMountedFiles(
  root: string,
  cluster: Pick<JoinServiceCluster, 'pkiDir' | 'apiServerEndpoint' | 'caCertificatePem' | 'writeJoinServiceKubeconfig'>,
  server?: string,
): Promise<{
  settings: Omit<JoinServiceSettings, 'host' | 'port' | 'metricsHost' | 'metricsPort' | 'healthPort'>;
  masterSecret: MasterSecret;
  measurementSalt: Buffer;
  caCertificatePem: string;
  ekCa: EkCa;
}> {
  const configDir = join(root, 'config');
  await mkdir(configDir, { recursive: true });
  const ekCa = await createEkCa(join(root, 'ek-ca'), { name: 'JoinService test' });
  await copyFile(ekCa.rootCertPath, join(configDir, 'ekRoots'));
  const masterSecret = generateMasterSecret();
  const measurementSalt = randomBytes(32);
  await writeFile(
    join(configDir, 'attestationConfig'),
    JSON.stringify(measurementsToFile(expectedMeasurements(BOOT, MEASURED_PCRS))),
  );
  await writeFile(join(configDir, 'measurementSalt'), measurementSalt);
  await writeFile(join(root, 'mastersecret.json'), masterSecretToJson(masterSecret), { mode: 0o600 });
  await cluster.writeJoinServiceKubeconfig(join(root, 'kubeconfig'), server);
  return {
    settings: {
      attestationConfigPath: join(configDir, 'attestationConfig'),
      attestationVariant: 'tpm2-ek',
      ekRootsPath: join(configDir, 'ekRoots'),
      acceptUnregisteredEks: false,
      measurementSaltPath: join(configDir, 'measurementSalt'),
      masterSecretPath: join(root, 'mastersecret.json'),
      pkiDir: cluster.pkiDir,
      kubeconfigPath: join(root, 'kubeconfig'),
      apiServerEndpoint: cluster.apiServerEndpoint,
      controlPlaneHoldMs: 600_000,
      challengeTtlMs: 10_000,
      maxConcurrentTickets: 64,
      measurementsPollMs: 200,
    },
    masterSecret,
    measurementSalt,
    caCertificatePem: cluster.caCertificatePem,
    ekCa,
  };
}

/**
 * A JoinService against a real control plane of its own (start and stop bounded by
 * CLUSTER_START_TIMEOUT_MS and CLUSTER_STOP_TIMEOUT_MS: give the hooks that call these as much).
 */
export async function startJoinFixture(
  logger: Logger,
  overrides: Partial<JoinServiceSettings> = {},
  options: {
    registry?: boolean;
    cluster?: ClusterConfig | ((apiServerIp: string) => ClusterConfig);
    certSans?: readonly string[];
  } = {},
): Promise<JoinFixture> {
  const dir = await createTempDir('constellation-joinservice-');
  let cluster: JoinServiceCluster | undefined;
  let registry: MetadataServer | undefined;
  try {
    cluster = await startJoinServiceCluster(join(dir.path, 'control-plane'), {
      cluster: options.cluster ?? CLUSTER,
      ...(options.certSans === undefined ? {} : { certSans: options.certSans }),
    });
    const files = await writeMountedFiles(dir.path, cluster);
    const [host = '', port = ''] = cluster.apiServerEndpoint.split(':');
    registry = await MetadataServer.start({
      instances: [],
      endpoint: { host, apiServerPort: Number(port), joinServicePort: 30090, initPort: 9000 },
      initSecretHash: '',
    });
    const settings: JoinServiceSettings = {
      host: '127.0.0.1',
      port: 0,
      metricsHost: '127.0.0.1',
      healthPort: 0,
      metricsPort: 0,
      ...files.settings,
      // Bare metal: no registry, the explicit switch instead.
      ...(options.registry === false ? { acceptUnregisteredEks: true } : { instanceRegistryUrl: registry.url }),
      ...overrides,
    };
    const service = await startJoinService(settings, logger);
    const client = new JoinServiceClient(
      `127.0.0.1:${service.port}`,
      serviceChannelCredentials(),
      SERVICE_CHANNEL_OPTIONS,
    );
    const running = { cluster, registry };
    return {
      dir,
      cluster,
      service,
      settings,
      masterSecret: files.masterSecret,
      measurementSalt: files.measurementSalt,
      caCertificatePem: files.caCertificatePem,
      ekCa: files.ekCa,
      registry,
      client,
      node: async (name, ip, options = {}) => {
        const node = await SimulatedNode.boot(name, ip, files.ekCa, options.boot ?? BOOT);
        if (options.registered !== false) {
          const instance: InstanceInfo = {
            name,
            ip,
            role: options.role ?? (name.startsWith('control-plane') ? 'control-plane' : 'worker'),
            ekPublicKeyHash: node.ekPublicKeyHash,
          };
          running.registry.update((doc) => ({ ...doc, instances: [...doc.instances, instance] }));
        }
        return node;
      },
      writeMeasurements: async (m) => {
        await writeFile(
          settings.attestationConfigPath,
          typeof m === 'string' ? m : JSON.stringify(measurementsToFile(m)),
        );
      },
      close: async () => {
        client.close();
        try {
          await service.close();
        } finally {
          await running.registry.close();
          await running.cluster.stop();
          await dir.remove();
        }
      },
    };
  } catch (error) {
    await registry?.close();
    await cluster?.stop();
    await dir.remove();
    throw error;
  }
}

/** A simulated node: its own swtpm manufactured with an EK certificate, measured with `boot`. */
export class SimulatedNode {
  readonly name: string;
  readonly ip: string;
  diskUuid = randomUUID();
  /** The disk receipt of this node's last join ticket, which its rejoins show. */
  diskReceipt: Buffer = Buffer.alloc(0);
  readonly swtpm: Swtpm;
  readonly tpm: Tpm;
  /** Rooted (`tpm2-ek`) issuer; tests may swap in another to play an attacker. */
  issuer: TpmIssuer;
  readonly ekPublicKeyHash: string;

  private constructor(name: string, ip: string, swtpm: Swtpm, tpm: Tpm, issuer: TpmIssuer, ekPublicKeyHash: string) {
    this.name = name;
    this.ip = ip;
    this.swtpm = swtpm;
    this.tpm = tpm;
    this.issuer = issuer;
    this.ekPublicKeyHash = ekPublicKeyHash;
  }

  static async boot(name: string, ip: string, ca: EkCa, boot: readonly BootComponent[] = BOOT): Promise<SimulatedNode> {
    const swtpm = await startSwtpm({ manufacture: { ca, vmid: name } });
    const tpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port, keepConnection: true }));
    const events = await measureBoot(tpm, boot);
    const intermediates = pemCertificatesToDer(await readFile(ca.intermediateCertPath, 'utf8'));
    const issuer = await TpmIssuer.rooted(tpm, { eventLog: () => events, ekIntermediates: intermediates });
    const ekPublicKeyHash = swtpm.manufactured?.ekPublicKeyHash ?? '';
    return new SimulatedNode(name, ip, swtpm, tpm, issuer, ekPublicKeyHash);
  }

  /**
   * The hello this node opens a join call with (no service nonce): what an attacker who has it,
   * or who owns the node, replays.
   */
  hello(): Extract<NonNullable<IssueJoinTicketRequest['step']>, { $case: 'hello' }> {
    const rooted = this.issuer.rooted;
    if (rooted === undefined) throw new Error('the fixture node must attest with an EK certificate');
    return {
      $case: 'hello',
      value: {
        attestationVariant: this.issuer.variant.name,
        protocolVersion: CHALLENGE_PROTOCOL_VERSION,
        akPublic: rooted.akPublic,
        serviceNonce: Buffer.alloc(0),
        identity: rooted.identity,
      },
    };
  }

  /** The same TPM and measurements, attesting with the unrooted `qemu-vtpm` variant. */
  unrootedIssuer(): TpmIssuer {
    return new TpmIssuer(this.tpm, { eventLog: () => [] });
  }

  /** Asks for a join ticket with honest kubelet CSRs, or with the given (attacker-shaped) ones. */
  async requestJoin(
    client: JoinServiceClient,
    options: { controlPlane?: boolean; clientCsrDer?: Buffer; servingCsrDer?: Buffer } = {},
  ): Promise<{ ticket: JoinTicket; clientKeyPem: string; servingKeyPem: string }> {
    const clientCsr = await createKubeletCsr(this.name, []);
    const servingCsr = await createKubeletCsr(this.name, [this.ip], [this.name]);
    const request = JoinTicketRequest.encode({
      diskUuid: this.diskUuid,
      kubeletClientCertificateRequest: options.clientCsrDer ?? clientCsr.csrDer,
      kubeletServingCertificateRequest: options.servingCsrDer ?? servingCsr.csrDer,
      isControlPlane: options.controlPlane ?? false,
    }).finish();
    const plaintext = await requestWithAttestation(
      client.issueJoinTicket({ deadline: Date.now() + 20_000 }),
      this.issuer,
      request,
    );
    const ticket = JoinTicket.decode(plaintext);
    this.diskReceipt = Buffer.from(ticket.diskReceipt);
    return { ticket, clientKeyPem: clientCsr.keyPem, servingKeyPem: servingCsr.keyPem };
  }

  /** Asks for a rejoin ticket for its disk, showing its last join's receipt or the given one. */
  async requestRejoin(
    client: JoinServiceClient,
    options: { diskUuid?: string; diskReceipt?: Uint8Array } = {},
  ): Promise<RejoinTicket> {
    const request = RejoinTicketRequest.encode({
      diskUuid: options.diskUuid ?? this.diskUuid,
      diskReceipt: Buffer.from(options.diskReceipt ?? this.diskReceipt),
    }).finish();
    return RejoinTicket.decode(
      await requestWithAttestation(client.issueRejoinTicket({ deadline: Date.now() + 20_000 }), this.issuer, request),
    );
  }

  async stop(): Promise<void> {
    await this.tpm.close();
    await this.swtpm.stop();
  }
}

/** The status code and message of a failed RPC. */
export async function rpcFailure(
  promise: Promise<unknown>,
): Promise<{ code: grpc.status; details: string; metadata: grpc.Metadata | undefined }> {
  const err = await promise.then(
    () => {
      throw new Error('expected the call to fail');
    },
    (e: unknown) => e as grpc.ServiceError,
  );
  return { code: err.code, details: err.details, metadata: err.metadata };
}
