import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { Server as HttpServer } from 'node:http';
import * as grpc from '@grpc/grpc-js';
import * as k8s from '@kubernetes/client-node';
import { StatusError, serveChallenge, serviceServerCredentials } from '@constellation/atls';
import type { ChallengeRejection } from '@constellation/atls';
import { TpmValidator } from '@constellation/attestation';
import { masterSecretFromJson } from '@constellation/keys';
import type { Logger } from '@constellation/logger';
import {
  HealthStatus,
  JoinServiceService,
  JoinTicket,
  JoinTicketRequest,
  RejoinTicket,
  RejoinTicketRequest,
  grpcMessageLimits,
} from '@constellation/proto';
import type {
  IssueJoinTicketRequest,
  IssueJoinTicketResponse,
  IssueRejoinTicketRequest,
  IssueRejoinTicketResponse,
} from '@constellation/proto';
import { ClusterPki } from './cluster-pki.js';
import { ControlPlaneLease } from './control-plane-lease.js';
import { MeasurementsSource } from './measurements-source.js';
import { JoinMetrics } from './metrics.js';
import { TicketService } from './ticket-service.js';

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
  const validator = new TpmValidator({ measurements: () => measurements.current() });
  const pki = await ClusterPki.load(settings.pkiDir);
  const tickets = new TicketService({
    core,
    pki,
    masterSecret,
    measurementSalt,
    apiServerEndpoint: settings.apiServerEndpoint,
    lease: new ControlPlaneLease({ coordination, core, holdMs: settings.controlPlaneHoldMs }),
    tokenTtlMs: settings.tokenTtlMs,
    logger,
  });

  let inFlight = 0;
  const limited = async <T>(work: () => Promise<T>): Promise<T> => {
    if (inFlight >= settings.maxConcurrentTickets) {
      throw new StatusError(grpc.status.RESOURCE_EXHAUSTED, `${inFlight} tickets are being issued; retry shortly`, {
        'retry-after-ms': '500',
      });
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

  const server = new grpc.Server({ ...grpcMessageLimits, 'grpc.max_concurrent_streams': 1_000 });
  server.addService(JoinServiceService, {
    issueJoinTicket: (call: grpc.ServerDuplexStream<IssueJoinTicketRequest, IssueJoinTicketResponse>) => {
      serveChallenge(call, {
        validators: [validator],
        challengeTtlMs: settings.challengeTtlMs,
        maxRequestBytes: MAX_REQUEST_BYTES,
        logger,
        onRejected: (reason) => {
          onRejected(reason);
          if (reason !== 'handler') metrics.joins.inc({ kind: 'join', role: 'unknown', outcome: 'rejected' });
        },
        handle: async (bytes) => {
          let request: JoinTicketRequest;
          try {
            request = JoinTicketRequest.decode(bytes);
          } catch {
            throw new StatusError(grpc.status.INVALID_ARGUMENT, 'request is not a JoinTicketRequest');
          }
          const role = request.isControlPlane ? 'control-plane' : 'worker';
          const stop = metrics.ticketLatency.startTimer({ kind: 'join' });
          try {
            const ticket = await limited(() => tickets.joinTicket(request));
            metrics.joins.inc({ kind: 'join', role, outcome: 'issued' });
            return Buffer.from(JoinTicket.encode(ticket).finish());
          } catch (err) {
            metrics.joins.inc({ kind: 'join', role, outcome: outcomeOf(err) });
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
        challengeTtlMs: settings.challengeTtlMs,
        maxRequestBytes: MAX_REQUEST_BYTES,
        logger,
        onRejected,
        handle: (bytes) => {
          let request: RejoinTicketRequest;
          try {
            request = RejoinTicketRequest.decode(bytes);
          } catch {
            return Promise.reject(
              new StatusError(grpc.status.INVALID_ARGUMENT, 'request is not a RejoinTicketRequest'),
            );
          }
          try {
            const ticket = tickets.rejoinTicket(request);
            metrics.joins.inc({ kind: 'rejoin', role: 'unknown', outcome: 'issued' });
            return Promise.resolve(Buffer.from(RejoinTicket.encode(ticket).finish()));
          } catch (err) {
            metrics.joins.inc({ kind: 'rejoin', role: 'unknown', outcome: outcomeOf(err) });
            return Promise.reject(err instanceof Error ? err : new Error(String(err)));
          }
        },
      });
    },
  });
  const health = new HealthStatus({ '': 'SERVING', 'constellation.join.v1.JoinService': 'SERVING' });
  health.addTo(server);
  const port = await bind(server, `${settings.host}:${settings.port}`, serviceServerCredentials());
  const healthServer = new grpc.Server();
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

function bind(server: grpc.Server, address: string, credentials: grpc.ServerCredentials): Promise<number> {
  return new Promise((resolve, reject) => {
    server.bindAsync(address, credentials, (err, bound) => {
      if (err) reject(err);
      else resolve(bound);
    });
  });
}
