import { readFile } from 'node:fs/promises';
import * as k8s from '@kubernetes/client-node';
import {
  AgentAttester,
  GrpcPlainFront,
  OutstandingChallenges,
  UnansweredChallenges,
  serviceTlsIdentity,
} from '@constellation/atls';
import { createAttestationVerifier, readPemCertificates } from '@constellation/attestation';
import type { AttestationPolicy, EventPolicy, Measurements } from '@constellation/attestation';
import { errorMessage } from '@constellation/errors';
import { masterSecretFromJson } from '@constellation/keys';
import type { Logger } from '@constellation/logger';
import { HealthStatus, JoinServiceService, createGrpcServer } from '@constellation/proto';
import { admission } from './admission.js';
import { readControlPlaneEks } from './control-plane-eks.js';
import { boundedApiClients } from './api-clients.js';
import { ApiServerClock } from './api-server-clock.js';
import { BoundedTlsListener } from './bounded-tls-listener.js';
import { ShedLog } from './shed-log.js';
import { ClusterConfigCache } from './cluster-config-cache.js';
import { ClusterPki } from './cluster-pki.js';
import { ConcurrencyLimit } from './concurrency-limit.js';
import { JOINSERVICE_DEFAULTS } from './config.js';
import type { JoinServiceSettings } from './config.js';
import { ControlPlaneLease } from './control-plane-lease.js';
import { DiskBindings, NodeAddressBindings, NodeNameBindings } from '@constellation/kubeadm';
import { HttpInstanceRegistry } from './instance-registry.js';
import type { InstanceRegistry } from './instance-registry.js';
import { joinHandlers } from './join-handlers.js';
import { MeasurementsSource } from './measurements-source.js';
import { startMetricsServer } from './metrics-server.js';
import { JoinMetrics } from './metrics.js';
import { TicketBudget } from './ticket-budget.js';
import { TicketService } from './ticket-service.js';

export interface RunningJoinService {
  port: number;
  metricsPort: number;
  healthPort: number;
  metrics: JoinMetrics;
  measurements: MeasurementsSource;
  close(): Promise<void>;
}

/** The measurements, reloaded from the mounted file, with their reload counted in the metrics. */
async function startMeasurements(
  settings: JoinServiceSettings,
  metrics: JoinMetrics,
  logger: Logger,
): Promise<MeasurementsSource> {
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
  return measurements;
}

/** The ticket logic with its cluster state: API clients, PKI, secrets, lease, disks, budgets. */
async function createTicketService(settings: JoinServiceSettings, logger: Logger): Promise<TicketService> {
  const kc = new k8s.KubeConfig();
  if (settings.kubeconfigPath === undefined) kc.loadFromCluster();
  else kc.loadFromFile(settings.kubeconfigPath);
  const { core, coordination } = boundedApiClients(kc, JOINSERVICE_DEFAULTS.apiTimeoutMs);
  const clock = new ApiServerClock({
    maxSkewMs: JOINSERVICE_DEFAULTS.maxClockSkewMs,
    retryAfterMs: JOINSERVICE_DEFAULTS.apiRetryAfterMs,
  });
  const masterSecret = masterSecretFromJson(
    await readFile(settings.masterSecretPath, 'utf8'),
    settings.masterSecretPath,
  );
  const measurementSalt = await readFile(settings.measurementSaltPath);
  if (measurementSalt.length !== 32)
    throw new Error(`${settings.measurementSaltPath}: measurement salt must be 32 bytes, is ${measurementSalt.length}`);
  return new TicketService({
    clusterConfig: new ClusterConfigCache(core, JOINSERVICE_DEFAULTS.clusterConfigMaxAgeMs),
    pki: await ClusterPki.load(settings.pkiDir),
    masterSecret,
    measurementSalt,
    apiServerEndpoint: settings.apiServerEndpoint,
    lease: new ControlPlaneLease({ coordination, core, holdMs: settings.controlPlaneHoldMs, clock }),
    disks: new DiskBindings({ core }),
    names: new NodeNameBindings({ core }),
    addresses: new NodeAddressBindings({ core }),
    budget: new TicketBudget(settings.ticketBudget ?? JOINSERVICE_DEFAULTS.ticketBudget),
    logger,
  });
}

/**
 * The kubelet's probes of the health port: one connection per probe. What it keeps per address
 * and in all, and how soon an idle one is closed, bound what a stranger's silent connections hold.
 */
const HEALTH_CONNECTIONS = { perAddress: 8, total: 64 };
const HEALTH_CONNECTION_IDLE_MS = 30_000;

/** Starts the JoinService: gRPC (challenge protocol, health), a plaintext health port and HTTP metrics. */
export async function startJoinService(settings: JoinServiceSettings, logger: Logger): Promise<RunningJoinService> {
  const metrics = new JoinMetrics();
  const measurements = await startMeasurements(settings, metrics, logger);
  const { validator, identity } = createAttestationVerifier(
    await attestationPolicy(settings, measurements),
    (message) => {
      logger.warn(message);
    },
  );
  const serviceAttester =
    settings.attestationAgentPath === undefined ? undefined : new AgentAttester(settings.attestationAgentPath);
  const shedLog = new ShedLog(logger);
  const server = createGrpcServer({
    'grpc.max_concurrent_streams': 1_000,
    'grpc.max_connection_idle_ms': settings.connectionIdleMs ?? JOINSERVICE_DEFAULTS.connectionIdleMs,
  });
  server.addService(
    JoinServiceService,
    joinHandlers({
      challenge: {
        validators: [validator],
        ...(identity === undefined ? {} : { identity }),
        ...(serviceAttester === undefined ? {} : { serviceAttester }),
        challengeTtlMs: settings.challengeTtlMs,
        outstanding: new OutstandingChallenges(),
        // Challenges one address leaves unanswered: they hold no slot (the answer takes its own,
        // admitAnswer), so this bounds only what one address makes the service remember.
        unanswered: new UnansweredChallenges(settings.unansweredPerSource ?? JOINSERVICE_DEFAULTS.unansweredPerSource),
        maxRequestBytes: JOINSERVICE_DEFAULTS.maxRequestBytes,
        logger,
      },
      admission: admission(instanceRegistry(settings), await controlPlaneEks(settings)),
      tickets: await createTicketService(settings, logger),
      limit: new ConcurrencyLimit({
        max: settings.maxConcurrentTickets,
        maxWaiting:
          settings.maxConcurrentTickets * (settings.waitingCallsPerSlot ?? JOINSERVICE_DEFAULTS.waitingCallsPerSlot),
        maxWaitMs: JOINSERVICE_DEFAULTS.maxWaitForSlotMs,
        minRetryAfterMs: JOINSERVICE_DEFAULTS.busyRetryAfterMs,
        maxRetryAfterMs: JOINSERVICE_DEFAULTS.busyMaxRetryAfterMs,
        initialHoldMs: JOINSERVICE_DEFAULTS.initialSlotHoldMs,
      }),
      metrics,
      shedLog,
    }),
  );
  const health = new HealthStatus({ '': 'SERVING', 'constellation.join.v1.JoinService': 'SERVING' });
  health.addTo(server);
  const listener = new BoundedTlsListener(server, {
    ...serviceTlsIdentity(),
    maxHandshakes: settings.maxHandshakes ?? JOINSERVICE_DEFAULTS.maxHandshakes,
    staleHandshakeMs: JOINSERVICE_DEFAULTS.staleHandshakeMs,
    handshakeTimeoutMs: settings.handshakeTimeoutMs ?? JOINSERVICE_DEFAULTS.handshakeTimeoutMs,
    maxConnections: settings.maxConnections ?? JOINSERVICE_DEFAULTS.maxConnections,
    onShed: (reason) => {
      metrics.shedConnections.inc({ reason });
    },
    onHandshake: (ms) => {
      metrics.handshakeLatency.observe(ms / 1000);
    },
  });
  const acceptors = settings.acceptors ?? JOINSERVICE_DEFAULTS.acceptors;
  const port = await listener.listen(settings.port, settings.host, acceptors).catch((err: unknown) => {
    const without = acceptors > 1 ? ' (--acceptors=1 listens without the helper process that copies the socket)' : '';
    throw new Error(`cannot serve joins on ${settings.host}:${settings.port}: ${errorMessage(err)}${without}`, {
      cause: err,
    });
  });
  metrics.joinPort = port;
  const healthServer = createGrpcServer({ 'grpc.max_connection_idle_ms': HEALTH_CONNECTION_IDLE_MS });
  health.addTo(healthServer);
  const healthFront = new GrpcPlainFront(healthServer, { established: HEALTH_CONNECTIONS });
  const healthPort = await healthFront.listen(settings.healthPort, settings.host);
  const http = await startMetricsServer(metrics, settings.metricsHost, settings.metricsPort);
  logger.info('joinservice serving', {
    port,
    metricsHost: settings.metricsHost,
    metricsPort: http.port,
    healthPort,
    apiServerEndpoint: settings.apiServerEndpoint,
  });

  return {
    port,
    metricsPort: http.port,
    healthPort,
    metrics,
    measurements,
    close: async () => {
      shedLog.flush();
      measurements.stop();
      serviceAttester?.close();
      await healthFront.close(0);
      healthServer.forceShutdown();
      await http.close();
      await listener.close();
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
  const eventPolicy = (): EventPolicy | undefined => measurements.currentEventPolicy();
  if (settings.attestationVariant === 'qemu-vtpm') return { variant: 'qemu-vtpm', measurements: current, eventPolicy };
  if (settings.ekRootsPath === undefined)
    throw new Error('attestation variant "tpm2-ek" needs the pinned EK CA roots (join-config key ekRoots)');
  const ekRoots = (await readPemCertificates(settings.ekRootsPath)).certificates;
  const ekIntermediates =
    settings.ekIntermediatesPath === undefined
      ? []
      : (await readPemCertificates(settings.ekIntermediatesPath)).certificates;
  return { variant: 'tpm2-ek', measurements: current, eventPolicy, ekRoots, ekIntermediates };
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

/** Bare metal's control-plane list; only meaningful where no registry names each machine's role. */
async function controlPlaneEks(settings: JoinServiceSettings): Promise<ReadonlySet<string> | undefined> {
  if (settings.controlPlaneEksPath === undefined) return undefined;
  if (!settings.acceptUnregisteredEks)
    throw new Error(
      "--control-plane-eks applies only with --accept-unregistered-eks: an instance registry names each machine's role itself",
    );
  return readControlPlaneEks(settings.controlPlaneEksPath);
}
