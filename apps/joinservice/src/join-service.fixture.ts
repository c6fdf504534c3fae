// Test fixture: a JoinService with its mounted files, an API server stand-in, and simulated
// nodes that each have a real swtpm. Used by the JoinService tests and benchmarks.
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type * as grpc from '@grpc/grpc-js';
import { SERVICE_CHANNEL_OPTIONS, requestWithAttestation, serviceChannelCredentials } from '@constellation/atls';
import {
  TpmIssuer,
  componentDigest,
  expectedMeasurements,
  measureBoot,
  measurementsToFile,
} from '@constellation/attestation';
import type { BootComponent, Measurements } from '@constellation/attestation';
import {
  CertificateAuthority,
  SHARED_CONTROL_PLANE_PKI_FILES,
  createKubeletCsr,
  generateMasterSecret,
  masterSecretToJson,
} from '@constellation/keys';
import type { MasterSecret } from '@constellation/keys';
import { clusterConfigMap } from '@constellation/kubeadm';
import type { ClusterConfig } from '@constellation/kubeadm';
import type { Logger } from '@constellation/logger';
import {
  JoinServiceClient,
  JoinTicket,
  JoinTicketRequest,
  RejoinTicket,
  RejoinTicketRequest,
} from '@constellation/proto';
import type { MeasuredEvent } from '@constellation/proto';
import { KubeApiServer } from '@constellation/sandbox';
import { createTempDir, startSwtpm } from '@constellation/testing';
import type { Swtpm, TempDir } from '@constellation/testing';
import { SocketTransport, Tpm } from '@constellation/tpm';
import { startJoinService } from './join-service.js';
import type { JoinServiceSettings, RunningJoinService } from './join-service.js';

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
  api: KubeApiServer;
  service: RunningJoinService;
  settings: JoinServiceSettings;
  masterSecret: MasterSecret;
  measurementSalt: Buffer;
  caCertificatePem: string;
  client: JoinServiceClient;
  writeMeasurements(m: Measurements | string): Promise<void>;
  close(): Promise<void>;
}

export function kubeconfigFor(url: string): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: sandbox',
    '  cluster:',
    `    server: ${url}`,
    '    insecure-skip-tls-verify: true',
    'users:',
    '- name: joinservice',
    '  user:',
    '    token: sandbox',
    'contexts:',
    '- name: sandbox',
    '  context:',
    '    cluster: sandbox',
    '    user: joinservice',
    'current-context: sandbox',
    '',
  ].join('\n');
}

/** Writes the files the DaemonSet mounts into `root` and returns their settings. */
export async function writeMountedFiles(
  root: string,
  apiUrl: string,
): Promise<{
  settings: Omit<JoinServiceSettings, 'host' | 'port' | 'metricsHost' | 'metricsPort' | 'healthPort'>;
  masterSecret: MasterSecret;
  measurementSalt: Buffer;
  caCertificatePem: string;
}> {
  const configDir = join(root, 'config');
  const pkiDir = join(root, 'pki');
  await mkdir(join(pkiDir, 'etcd'), { recursive: true });
  await mkdir(configDir, { recursive: true });
  const masterSecret = generateMasterSecret();
  const measurementSalt = randomBytes(32);
  const { certificatePem, keyPem } = await CertificateAuthority.generate('kubernetes');
  await writeFile(join(pkiDir, 'ca.crt'), certificatePem);
  await writeFile(join(pkiDir, 'ca.key'), keyPem, { mode: 0o600 });
  for (const name of SHARED_CONTROL_PLANE_PKI_FILES.filter((n) => n !== 'ca.crt' && n !== 'ca.key')) {
    await writeFile(join(pkiDir, name), `test content of ${name}\n`, { mode: 0o600 });
  }
  await writeFile(
    join(configDir, 'attestationConfig'),
    JSON.stringify(measurementsToFile(expectedMeasurements(BOOT, MEASURED_PCRS))),
  );
  await writeFile(join(configDir, 'measurementSalt'), measurementSalt);
  await writeFile(join(root, 'mastersecret.json'), masterSecretToJson(masterSecret), { mode: 0o600 });
  await writeFile(join(root, 'kubeconfig'), kubeconfigFor(apiUrl));
  return {
    settings: {
      attestationConfigPath: join(configDir, 'attestationConfig'),
      measurementSaltPath: join(configDir, 'measurementSalt'),
      masterSecretPath: join(root, 'mastersecret.json'),
      pkiDir,
      kubeconfigPath: join(root, 'kubeconfig'),
      apiServerEndpoint: '10.42.0.2:6443',
      tokenTtlMs: 15 * 60_000,
      controlPlaneHoldMs: 600_000,
      challengeTtlMs: 10_000,
      maxConcurrentTickets: 64,
      measurementsPollMs: 200,
    },
    masterSecret,
    measurementSalt,
    caCertificatePem: certificatePem,
  };
}

export async function startJoinFixture(
  logger: Logger,
  overrides: Partial<JoinServiceSettings> = {},
): Promise<JoinFixture> {
  const dir = await createTempDir('constellation-joinservice-');
  const api = await KubeApiServer.start();
  api.store.create(
    { group: '', version: 'v1', resource: 'configmaps', kind: 'ConfigMap', namespaced: true },
    'kube-system',
    {
      metadata: { name: 'constellation-cluster' },
      data: clusterConfigMap(CLUSTER).data,
    },
  );
  const files = await writeMountedFiles(dir.path, api.url);
  const settings: JoinServiceSettings = {
    host: '127.0.0.1',
    port: 0,
    metricsHost: '127.0.0.1',
    healthPort: 0,
    metricsPort: 0,
    ...files.settings,
    ...overrides,
  };
  const service = await startJoinService(settings, logger);
  const client = new JoinServiceClient(
    `127.0.0.1:${service.port}`,
    serviceChannelCredentials(),
    SERVICE_CHANNEL_OPTIONS,
  );
  return {
    dir,
    api,
    service,
    settings,
    masterSecret: files.masterSecret,
    measurementSalt: files.measurementSalt,
    caCertificatePem: files.caCertificatePem,
    client,
    writeMeasurements: async (m) => {
      await writeFile(
        settings.attestationConfigPath,
        typeof m === 'string' ? m : JSON.stringify(measurementsToFile(m)),
      );
    },
    close: async () => {
      client.close();
      await service.close();
      await api.close();
      await dir.remove();
    },
  };
}

/** A simulated node: its own swtpm, measured with `boot`. */
export class SimulatedNode {
  readonly name: string;
  readonly ip: string;
  readonly diskUuid = randomUUID();
  readonly swtpm: Swtpm;
  readonly tpm: Tpm;
  readonly issuer: TpmIssuer;

  private constructor(name: string, ip: string, swtpm: Swtpm, tpm: Tpm, events: MeasuredEvent[]) {
    this.name = name;
    this.ip = ip;
    this.swtpm = swtpm;
    this.tpm = tpm;
    this.issuer = new TpmIssuer(tpm, { eventLog: () => events });
  }

  static async boot(name: string, ip: string, boot: readonly BootComponent[] = BOOT): Promise<SimulatedNode> {
    const swtpm = await startSwtpm();
    const tpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port, keepConnection: true }));
    const events = await measureBoot(tpm, boot);
    return new SimulatedNode(name, ip, swtpm, tpm, events);
  }

  async requestJoin(
    client: JoinServiceClient,
    options: { controlPlane?: boolean; csrDer?: Buffer } = {},
  ): Promise<{ ticket: JoinTicket; kubeletKeyPem: string }> {
    const csr = await createKubeletCsr(this.name, [this.ip]);
    const request = JoinTicketRequest.encode({
      diskUuid: this.diskUuid,
      certificateRequest: options.csrDer ?? csr.csrDer,
      isControlPlane: options.controlPlane ?? false,
    }).finish();
    const plaintext = await requestWithAttestation(
      client.issueJoinTicket({ deadline: Date.now() + 20_000 }),
      this.issuer,
      request,
    );
    return { ticket: JoinTicket.decode(plaintext), kubeletKeyPem: csr.keyPem };
  }

  async requestRejoin(client: JoinServiceClient): Promise<RejoinTicket> {
    const request = RejoinTicketRequest.encode({ diskUuid: this.diskUuid }).finish();
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
