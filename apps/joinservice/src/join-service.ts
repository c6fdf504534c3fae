import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { Server as HttpServer } from 'node:http';
import * as grpc from '@grpc/grpc-js';
import * as k8s from '@kubernetes/client-node';
import { AgentAttester, StatusError, serveChallenge, serviceServerCredentials } from '@constellation/atls';
import type { ChallengeRejection } from '@constellation/atls';
import { createAttestationVerifier, readPemCertificates } from '@constellation/attestation';
import type {
  AttestationPolicy,
  Measurements,
  ValidationResult,
  VerifiedTpmIdentity,
} from '@constellation/attestation';
import { masterSecretFromJson } from '@constellation/keys';
import type { Logger } from '@constellation/logger';
import {
  HealthStatus,
  JoinServiceService,
  JoinTicket,
  JoinTicketRequest,
  RejoinTicket,
  RejoinTicketRequest,
  createGrpcServer,
} from '@constellation/proto';
import type {
  IssueJoinTicketRequest,
  IssueJoinTicketResponse,
  IssueRejoinTicketRequest,
  IssueRejoinTicketResponse,
} from '@constellation/proto';
import { ClusterPki } from './cluster-pki.js';
import { ControlPlaneLease } from './control-plane-lease.js';
import { DiskBindings } from './disk-binding.js';
import { HttpInstanceRegistry } from './instance-registry.js';
import type { InstanceRegistry } from './instance-registry.js';
import { MeasurementsSource } from './measurements-source.js';
import { JoinMetrics } from './metrics.js';
import { NodeTokens } from './node-tokens.js';
import { TicketBudget } from './ticket-budget.js';
import { TicketService } from './ticket-service.js';
import type { AdmittedNode } from './ticket-service.js';
import { errorMessage } from '@constellation/errors';

/** Everything the JoinService needs, parsed and validated by the program before it starts. */
export interface JoinServiceSettings {
  host: string;
  port: number;
  metricsHost: string;
  metricsPort: number;
  /** Plaintext gRPC port that serves only the health service: Kubernetes `grpc:` probes cannot use TLS. */
  healthPort: number;
  /** Measurements file (ConfigMap join-config, key attestationConfig). */
  attestationConfigPath: string;
  /**
   * "tpm2-ek" (EK certificate to a pinned root, credential activation, instance registry) or the
   * unrooted "qemu-vtpm", which trusts any attestation key and is accepted only when named.
   */
  attestationVariant: 'tpm2-ek' | 'qemu-vtpm';
  /** PEM file of the pinned EK CA roots (join-config key ekRoots); required for "tpm2-ek". */
  ekRootsPath?: string;
  /** PEM file of EK CA intermediates the service knows (join-config key ekIntermediates); optional. */
  ekIntermediatesPath?: string;
  /** The platform's instance registry (cloud API; mini's metadata service). */
  instanceRegistryUrl?: string;
  /**
   * Bare metal without a registry: admit any node whose EK chains to the roots, taking its name
   * and addresses from its own request. Off by default; exclusive with instanceRegistryUrl.
   */
  acceptUnregisteredEks: boolean;
  /**
   * Unix socket of the host's attestation agent (served by the control-plane bootstrapper): lets
   * the service prove to joining nodes that it runs on an attested control-plane node. Nodes that
   * require it refuse a service without one.
   */
  attestationAgentPath?: string;
  /** Tickets one machine may get in a row, then one per `refillMs` (default 5, then one a minute). */
  ticketBudget?: { burst: number; refillMs: number };
  /** 32 raw bytes (ConfigMap join-config, key measurementSalt). */
  measurementSaltPath: string;
  /** Master secret JSON (Secret constellation-mastersecret). */
  masterSecretPath: string;
  /** The host's /etc/kubernetes/pki. */
  pkiDir: string;
  /** Kubeconfig file; in-cluster service account credentials when absent. */
  kubeconfigPath?: string;
  apiServerEndpoint: string;
  tokenTtlMs: number;
  controlPlaneHoldMs: number;
  challengeTtlMs: number;
  maxConcurrentTickets: number;
  measurementsPollMs: number;
}

export interface RunningJoinService {
  port: number;
  metricsPort: number;
  healthPort: number;
  metrics: JoinMetrics;
  measurements: MeasurementsSource;
  close(): Promise<void>;
}

const MAX_REQUEST_BYTES = 16 * 1024;

type Outcome = 'issued' | 'rejected' | 'retry' | 'error';

/** Counts a refusal by the ticket logic under its reason (metrics), and says what kind of outcome it was. */
function refused(metrics: JoinMetrics, kind: 'join' | 'rejoin', err: unknown): Outcome {
  if (err instanceof StatusError) metrics.refusals.inc({ kind, reason: err.reason });
  return outcomeOf(err);
}

function outcomeOf(err: unknown): Outcome {
  if (!(err instanceof StatusError)) return 'error';
  if (err.code === grpc.status.UNAVAILABLE || err.code === grpc.status.RESOURCE_EXHAUSTED) return 'retry';
  return 'rejected';
}

/** Starts the JoinService: gRPC (challenge protocol, health) and an HTTP metrics endpoint. */
export async function startJoinService(settings: JoinServiceSettings, logger: Logger): Promise<RunningJoinService> {
  const kc = new k8s.KubeConfig();
  if (settings.kubeconfigPath === undefined) kc.loadFromCluster();
  else kc.loadFromFile(settings.kubeconfigPath);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const coordination = kc.makeApiClient(k8s.CoordinationV1Api);

  const masterSecret = masterSecretFromJson(
    await readFile(settings.masterSecretPath, 'utf8'),
    settings.masterSecretPath,
  );
  const measurementSalt = await readFile(settings.measurementSaltPath);
  if (measurementSalt.length !== 32)
    throw new Error(`${settings.measurementSaltPath}: measurement salt must be 32 bytes, is ${measurementSalt.length}`);
  const metrics = new JoinMetrics();
  const measurements = new MeasurementsSource({
    path: settings.attestationConfigPath,
    logger,
    pollIntervalMs: settings.measurementsPollMs,
    onLoaded: (generation) => {
      metrics.measurementsGeneration.set(generation);
    },
    onFailed: () => {
      metrics.measurementsReloadFailures.inc();
    },
  });
  await measurements.start();
  const { validator, identity } = createAttestationVerifier(
    await attestationPolicy(settings, measurements),
    (message) => {
      logger.warn(message);
    },
  );
  const registry = instanceRegistry(settings);
  const serviceAttester =
    settings.attestationAgentPath === undefined ? undefined : new AgentAttester(settings.attestationAgentPath);
  const proveHost = serviceAttester === undefined ? {} : { serviceAttester };
  /** Everything a ticket grants is decided from who the node is, never from what it asks for. */
  const admit = async (result: ValidationResult, proven: VerifiedTpmIdentity | undefined): Promise<AdmittedNode> => {
    if (proven === undefined) return { machineId: `ak-${result.attestationKeyName}` };
    const ek = { machineId: proven.ekPublicKeyHash, ekPublicKeyHash: proven.ekPublicKeyHash };
    if (registry === undefined) return ek;
    let instance;
    try {
      instance = await registry.byEndorsementKey(proven.ekPublicKeyHash);
    } catch (err) {
      throw new StatusError(
        grpc.status.UNAVAILABLE,
        `the instance registry is not reachable: ${errorMessage(err)}`,
        { 'retry-after-ms': '2000' },
        'registry-unavailable',
      );
    }
    if (instance === undefined) {
      throw new StatusError(
        grpc.status.PERMISSION_DENIED,
        `endorsement key sha256:${proven.ekPublicKeyHash} is not registered: the platform knows no machine with this TPM`,
        {},
        'unregistered-ek',
      );
    }
    return { ...ek, instance };
  };
  const pki = await ClusterPki.load(settings.pkiDir);
  const tickets = new TicketService({
    core,
    pki,
    masterSecret,
    measurementSalt,
    apiServerEndpoint: settings.apiServerEndpoint,
    lease: new ControlPlaneLease({ coordination, core, holdMs: settings.controlPlaneHoldMs }),
    disks: new DiskBindings({ core }),
    // A join seldom needs more than one ticket; five in a row, then one a minute.
    budget: new TicketBudget(settings.ticketBudget ?? { burst: 5, refillMs: 60_000 }),
    // Reused while at least a third of its lifetime is left: plenty for one kubeadm join.
    tokens: new NodeTokens(settings.tokenTtlMs / 3),
    tokenTtlMs: settings.tokenTtlMs,
    logger,
  });

  let inFlight = 0;
  const limited = async <T>(work: () => Promise<T>): Promise<T> => {
    if (inFlight >= settings.maxConcurrentTickets) {
      throw new StatusError(
        grpc.status.RESOURCE_EXHAUSTED,
        `${inFlight} tickets are being issued; retry shortly`,
        { 'retry-after-ms': '500' },
        'busy',
      );
    }
    inFlight++;
    try {
      return await work();
    } finally {
      inFlight--;
    }
  };
  const onRejected = (reason: ChallengeRejection): void => {
    if (reason !== 'handler') metrics.attestationFailures.inc({ reason });
  };

  const server = createGrpcServer({ 'grpc.max_concurrent_streams': 1_000 });
  server.addService(JoinServiceService, {
    issueJoinTicket: (call: grpc.ServerDuplexStream<IssueJoinTicketRequest, IssueJoinTicketResponse>) => {
      serveChallenge(call, {
        validators: [validator],
        ...(identity === undefined ? {} : { identity }),
        ...proveHost,
        challengeTtlMs: settings.challengeTtlMs,
        maxRequestBytes: MAX_REQUEST_BYTES,
        logger,
        onRejected: (reason) => {
          onRejected(reason);
          if (reason !== 'handler') metrics.joins.inc({ kind: 'join', role: 'unknown', outcome: 'rejected' });
        },
        handle: async (bytes, result, proven) => {
          let request: JoinTicketRequest;
          try {
            request = JoinTicketRequest.decode(bytes);
          } catch {
            throw new StatusError(grpc.status.INVALID_ARGUMENT, 'request is not a JoinTicketRequest');
          }
          const role = request.isControlPlane ? 'control-plane' : 'worker';
          const stop = metrics.ticketLatency.startTimer({ kind: 'join' });
          try {
            const ticket = await limited(async () => tickets.joinTicket(request, await admit(result, proven)));
            metrics.joins.inc({ kind: 'join', role, outcome: 'issued' });
            return Buffer.from(JoinTicket.encode(ticket).finish());
          } catch (err) {
            metrics.joins.inc({ kind: 'join', role, outcome: refused(metrics, 'join', err) });
            throw err;
          } finally {
            stop();
          }
        },
      });
    },
    issueRejoinTicket: (call: grpc.ServerDuplexStream<IssueRejoinTicketRequest, IssueRejoinTicketResponse>) => {
      serveChallenge(call, {
        validators: [validator],
        ...(identity === undefined ? {} : { identity }),
        ...proveHost,
        challengeTtlMs: settings.challengeTtlMs,
        maxRequestBytes: MAX_REQUEST_BYTES,
        logger,
        onRejected,
        handle: async (bytes, result, proven) => {
          let request: RejoinTicketRequest;
          try {
            request = RejoinTicketRequest.decode(bytes);
          } catch {
            throw new StatusError(grpc.status.INVALID_ARGUMENT, 'request is not a RejoinTicketRequest');
          }
          try {
            const ticket = await tickets.rejoinTicket(request, await admit(result, proven));
            metrics.joins.inc({ kind: 'rejoin', role: 'unknown', outcome: 'issued' });
            return Buffer.from(RejoinTicket.encode(ticket).finish());
          } catch (err) {
            metrics.joins.inc({ kind: 'rejoin', role: 'unknown', outcome: refused(metrics, 'rejoin', err) });
            throw err;
          }
        },
      });
    },
  });
  const health = new HealthStatus({ '': 'SERVING', 'constellation.join.v1.JoinService': 'SERVING' });
  health.addTo(server);
  const port = await bind(server, `${settings.host}:${settings.port}`, serviceServerCredentials());
  const healthServer = createGrpcServer();
  health.addTo(healthServer);
  const healthPort = await bind(
    healthServer,
    `${settings.metricsHost}:${settings.healthPort}`,
    grpc.ServerCredentials.createInsecure(),
  );

  const http: HttpServer = createServer((req, res) => {
    if (req.url === '/metrics') {
      metrics.registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
        (err: unknown) => res.writeHead(500).end(String(err)),
      );
    } else if (req.url === '/healthz') {
      res.writeHead(200).end('ok');
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => http.listen(settings.metricsPort, settings.metricsHost, resolve));
  const address = http.address();
  const metricsPort = typeof address === 'object' && address !== null ? address.port : settings.metricsPort;
  logger.info('joinservice serving', { port, metricsPort, healthPort, apiServerEndpoint: settings.apiServerEndpoint });

  return {
    port,
    metricsPort,
    healthPort,
    metrics,
    measurements,
    close: async () => {
      measurements.stop();
      serviceAttester?.close();
      healthServer.forceShutdown();
      http.closeAllConnections();
      await new Promise<void>((resolve) =>
        http.close(() => {
          resolve();
        }),
      );
      await new Promise<void>((resolve) => {
        server.tryShutdown(() => {
          resolve();
        });
        setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, 2_000).unref();
      });
    },
  };
}

async function attestationPolicy(
  settings: JoinServiceSettings,
  measurements: MeasurementsSource,
): Promise<AttestationPolicy> {
  const current = (): Measurements => measurements.current();
  if (settings.attestationVariant === 'qemu-vtpm') return { variant: 'qemu-vtpm', measurements: current };
  if (settings.ekRootsPath === undefined)
    throw new Error('attestation variant "tpm2-ek" needs the pinned EK CA roots (join-config key ekRoots)');
  const ekRoots = (await readPemCertificates(settings.ekRootsPath)).certificates;
  const ekIntermediates =
    settings.ekIntermediatesPath === undefined
      ? []
      : (await readPemCertificates(settings.ekIntermediatesPath)).certificates;
  return { variant: 'tpm2-ek', measurements: current, ekRoots, ekIntermediates };
}

function instanceRegistry(settings: JoinServiceSettings): InstanceRegistry | undefined {
  if (settings.attestationVariant !== 'tpm2-ek') return undefined;
  if (settings.instanceRegistryUrl !== undefined && settings.acceptUnregisteredEks)
    throw new Error('an instance registry and accepting unregistered EKs exclude each other');
  if (settings.instanceRegistryUrl !== undefined) return new HttpInstanceRegistry(settings.instanceRegistryUrl);
  if (settings.acceptUnregisteredEks) return undefined;
  throw new Error(
    'attestation variant "tpm2-ek" needs an instance registry (--instance-registry-url) to bind tickets to machines; on bare metal without one, pass --accept-unregistered-eks',
  );
}

function bind(server: grpc.Server, address: string, credentials: grpc.ServerCredentials): Promise<number> {
  return new Promise((resolve, reject) => {
    server.bindAsync(address, credentials, (err, bound) => {
      if (err) reject(err);
      else resolve(bound);
    });
  });
}
