import { existsSync } from 'node:fs';
import { join } from 'node:path';

/** The JoinService's documented defaults; the DaemonSet in deploy/ relies on them. */
export const JOINSERVICE_DEFAULTS = {
  host: '0.0.0.0',
  port: 9090,
  /**
   * Loopback only: on a control plane's host network, any pod could otherwise read every node's
   * join outcomes and refusal reasons. The kubelet probes the health port, on `host`.
   */
  metricsHost: '127.0.0.1',
  metricsPort: 9091,
  healthPort: 9092,
  configDir: '/var/config',
  masterSecretFile: '/var/secrets/constellation-mastersecret/mastersecret.json',
  pkiDir: '/etc/kubernetes/pki',
  attestationVariant: 'tpm2-ek',
  controlPlaneJoinTimeoutSeconds: 600,
  challengeTtlMs: 10_000,
  /** Join calls served at once (attestation included); more get RESOURCE_EXHAUSTED with retry-after-ms. */
  maxConcurrentTickets: 16,
  /**
   * Join calls that may wait in line for a slot, per slot, and for how long: a freed slot goes to
   * the next call at once instead of idling until a refused node comes back, and the wait stays
   * short (a line of 16 at tens of joins per second is under a second). A longer line (4 per slot)
   * kept a 500-node storm's first calls waiting 5 to 7 s (measured). Beyond, callers are told when
   * to come back.
   */
  waitingCallsPerSlot: 1,
  maxWaitForSlotMs: 5_000,
  /**
   * Challenges one network address may leave unanswered at once. They hold no slot (waiting for a
   * node's answer costs the service nothing but memory), so this only bounds what one address
   * makes the service remember; nodes behind one NAT address join at once up to it.
   */
  unansweredPerSource: 64,
  /**
   * How long a slot is taken to be held until joins have completed, to spread the first refused
   * callers of a storm: without it they all came back after the minimum, round after round, until
   * the first joins completed (about 1,000 refusals in a 500-node storm; 500 with it, measured).
   * About what a join holds a slot for under a storm on 2 cores.
   */
  initialSlotHoldMs: 500,
  /**
   * TLS handshakes under way at once, against floods of connections that never finish theirs: a
   * 500-node storm keeps a few hundred under way on 2 cores, and a bound that bites there made
   * admitted calls slower (measured). Beyond it a newcomer cuts a handshake stalled for
   * `staleHandshakeMs`, or is reset unanswered.
   */
  maxHandshakes: 1_024,
  /**
   * Copies of the join port's listening socket, each accepting for the service: Node 20 accepts
   * one connection per event-loop turn per listening socket, and a busy service's loop turns
   * about every 10 ms, so a storm's connections waited in the kernel's accept queue, unseen and
   * unbounded by the service (see listeningCopies in @constellation/atls).
   */
  acceptors: 8,
  staleHandshakeMs: 2_000,
  /** A handshake not done by then is cut (Node's TLS server would keep it open for ever). */
  handshakeTimeoutMs: 10_000,
  /**
   * A connection with no call for this long is closed (grpc-js keeps one for ever by default). A
   * node keeps its connection only across a RESOURCE_EXHAUSTED refusal (back within 10 s for load,
   * a minute for rate); its client reopens one closed meanwhile.
   */
  connectionIdleMs: 60_000,
  /**
   * Established join-port connections kept at once, per remote address and in all; beyond, a new
   * one is cut at accept (a stranger's idle TLS connections otherwise held about 40 KiB each, with
   * no bound). A node needs one; the address bound leaves room for nodes behind one NAT, and the
   * Service keeps their own addresses (externalTrafficPolicy: Local).
   */
  maxConnections: { perAddress: 64, total: 4_096 },
  /** How often the mounted measurements file is checked for a new version. */
  measurementsPollMs: 5_000,
  /** A join seldom needs more than one ticket: five in a row, then one a minute. */
  ticketBudget: { burst: 5, refillMs: 60_000 },
  /** When a caller refused for load or an unreachable registry should come back. */
  busyRetryAfterMs: 500,
  /** The longest a caller refused for load is told to wait, however long the queue of waiting nodes. */
  busyMaxRetryAfterMs: 10_000,
  registryRetryAfterMs: 2_000,
  /** Every Kubernetes API call is aborted after this long: a silent API server means a retryable refusal. */
  apiTimeoutMs: 3_000,
  apiRetryAfterMs: 1_000,
  /** How far the JoinService's clock may be from the API server's before it refuses to mint tokens. */
  maxClockSkewMs: 5_000,
  /** The cluster configuration changes only on upgrades: read it at most this often. */
  clusterConfigMaxAgeMs: 5_000,
  /** Largest ticket request accepted (the requests carry a CSR and a few names). */
  maxRequestBytes: 16 * 1024,
} as const;

/** Everything the JoinService needs, parsed and validated before it starts. */
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
   * Bare metal: file of the EK hashes (`sha256:<hex>` per line) of machines that may join as
   * control planes, which receive the cluster CA keys. Without it no unregistered machine may.
   */
  controlPlaneEksPath?: string;
  /**
   * Unix socket of the host's attestation agent (served by the control-plane bootstrapper): lets
   * the service prove to joining nodes that it runs on an attested control-plane node. Nodes that
   * require it refuse a service without one.
   */
  attestationAgentPath?: string;
  /** Tickets one machine may get in a row, then one per `refillMs`. */
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
  controlPlaneHoldMs: number;
  challengeTtlMs: number;
  maxConcurrentTickets: number;
  /** Join calls that may wait in line for a slot, per slot; the default when absent. */
  waitingCallsPerSlot?: number;
  /** Challenges one address may leave unanswered at once (default JOINSERVICE_DEFAULTS.unansweredPerSource). */
  unansweredPerSource?: number;
  /** TLS handshakes under way at once, and how long one may take; the defaults when absent. */
  maxHandshakes?: number;
  /** Copies of the join port's listening socket that accept connections; the default when absent. */
  acceptors?: number;
  handshakeTimeoutMs?: number;
  /** A connection without calls is closed after this long; the default when absent. */
  connectionIdleMs?: number;
  /** Established join-port connections kept, per address and in all; the default when absent. */
  maxConnections?: { perAddress: number; total: number };
  measurementsPollMs: number;
}

/** The options as the command line parsed them. */
export interface JoinServiceFlags {
  host: string;
  port: number;
  metricsHost: string;
  metricsPort: number;
  healthPort: number;
  configDir: string;
  masterSecretFile: string;
  pkiDir: string;
  kubeconfig?: string;
  apiServerEndpoint: string;
  attestationVariant: 'tpm2-ek' | 'qemu-vtpm';
  instanceRegistryUrl?: string;
  attestationAgent?: string;
  acceptUnregisteredEks: boolean;
  controlPlaneEks?: string;
  controlPlaneJoinTimeoutSeconds: number;
  challengeTtlMs: number;
  maxConcurrentTickets: number;
  maxConnectionsPerAddress: number;
  maxConnections: number;
  acceptors: number;
}

/** Flags → settings: the mounted join-config files by their key names, durations in ms. */
export function compileSettings(flags: JoinServiceFlags): JoinServiceSettings {
  const configFile = (key: string): string => join(flags.configDir, key);
  return {
    host: flags.host,
    port: flags.port,
    metricsHost: flags.metricsHost,
    metricsPort: flags.metricsPort,
    healthPort: flags.healthPort,
    attestationConfigPath: configFile('attestationConfig'),
    attestationVariant: flags.attestationVariant,
    ekRootsPath: configFile('ekRoots'),
    ...(existsSync(configFile('ekIntermediates')) ? { ekIntermediatesPath: configFile('ekIntermediates') } : {}),
    ...(flags.instanceRegistryUrl === undefined ? {} : { instanceRegistryUrl: flags.instanceRegistryUrl }),
    acceptUnregisteredEks: flags.acceptUnregisteredEks,
    ...(flags.controlPlaneEks === undefined ? {} : { controlPlaneEksPath: flags.controlPlaneEks }),
    ...(flags.attestationAgent === undefined ? {} : { attestationAgentPath: flags.attestationAgent }),
    measurementSaltPath: configFile('measurementSalt'),
    masterSecretPath: flags.masterSecretFile,
    pkiDir: flags.pkiDir,
    ...(flags.kubeconfig === undefined ? {} : { kubeconfigPath: flags.kubeconfig }),
    apiServerEndpoint: flags.apiServerEndpoint,
    controlPlaneHoldMs: flags.controlPlaneJoinTimeoutSeconds * 1000,
    challengeTtlMs: flags.challengeTtlMs,
    maxConcurrentTickets: flags.maxConcurrentTickets,
    maxConnections: { perAddress: flags.maxConnectionsPerAddress, total: flags.maxConnections },
    acceptors: flags.acceptors,
    measurementsPollMs: JOINSERVICE_DEFAULTS.measurementsPollMs,
  };
}
