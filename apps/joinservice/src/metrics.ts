import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { acceptQueueLength } from './accept-queue.js';

/** The JoinService's Prometheus metrics, in a registry of their own (one per service instance). */
export class JoinMetrics {
  readonly registry = new Registry();
  readonly joins = new Counter({
    name: 'constellation_joinservice_tickets_total',
    help: 'Ticket requests by kind (join, rejoin), role and outcome (issued, rejected, retry, error).',
    labelNames: ['kind', 'role', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly attestationFailures = new Counter({
    name: 'constellation_joinservice_attestation_failures_total',
    help: 'Refused challenge exchanges by reason (attestation:measurements, attestation:nonce, expired, protocol, ...).',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly refusals = new Counter({
    name: 'constellation_joinservice_ticket_refusals_total',
    help: 'Attested requests refused by the ticket logic, by reason (rate-limited, unregistered-ek, role, csr, disk, ...).',
    labelNames: ['kind', 'reason'] as const,
    registers: [this.registry],
  });
  readonly shedConnections = new Counter({
    name: 'constellation_joinservice_shed_connections_total',
    help: 'Connections reset for load (busy: every handshake place taken; stale: a stalled handshake cut for a newcomer; connections: the established-connection bound of its address or in all reached).',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly ticketLatency = new Histogram({
    name: 'constellation_joinservice_ticket_seconds',
    help: 'Time from an attested request to its sealed ticket.',
    labelNames: ['kind'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });
  readonly handshakeLatency = new Histogram({
    name: 'constellation_joinservice_tls_handshake_seconds',
    help: "Time from accepting a connection to the end of its TLS handshake. In a storm, handshakes wait for the service's CPU: this grows before ticket_seconds does, and a node's call waits for it first.",
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });
  readonly measurementsGeneration = new Gauge({
    name: 'constellation_joinservice_measurements_generation',
    help: 'Number of times measurements were loaded successfully (1 after start).',
    registers: [this.registry],
  });
  /** The join port once it listens: the accept-queue gauge reads that port's kernel queue. */
  joinPort: number | undefined;
  readonly acceptQueue = new Gauge({
    name: 'constellation_joinservice_accept_queue_connections',
    help: "Connections to the join port the kernel holds that the service has not accepted yet, read at each scrape (Linux). Node accepts one per event-loop turn: in a storm, nodes wait here before any of the service's bounds sees them.",
    registers: [this.registry],
    collect: async () => {
      const waiting = this.joinPort === undefined ? undefined : await acceptQueueLength(this.joinPort);
      if (waiting !== undefined) this.acceptQueue.set(waiting);
    },
  });
  readonly measurementsReloadFailures = new Counter({
    name: 'constellation_joinservice_measurements_reload_failures_total',
    help: 'Measurements files that could not be loaded; the last good measurements stay in force.',
    registers: [this.registry],
  });
}
