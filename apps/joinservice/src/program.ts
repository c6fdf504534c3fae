import * as grpc from '@grpc/grpc-js';
import { Command, InvalidArgumentError } from '@commander-js/extra-typings';
import type { OptionValues } from '@commander-js/extra-typings';
import { variantByName } from '@constellation/attestation';
import { logLevelOption, parseInteger, parsePort } from '@constellation/command-line';
import { bridgeGrpcLogs, createLogger } from '@constellation/logger';
import { JOINSERVICE_DEFAULTS as DEFAULTS, compileSettings } from './config.js';
import { exitWhenClosed } from './exit-when-closed.js';
import { startJoinService } from './join-service.js';
import { VERSION } from './version.js';
import { errorMessage } from '@constellation/errors';

function parseEndpoint(value: string): string {
  if (!/^[A-Za-z0-9.-]+:\d{1,5}$|^\[[0-9a-fA-F:]+\]:\d{1,5}$/.test(value)) {
    throw new InvalidArgumentError(`expected host:port, got "${value}"`);
  }
  return value;
}

function parseVariant(value: string): 'tpm2-ek' | 'qemu-vtpm' {
  let name: string;
  try {
    name = variantByName(value).name;
  } catch (err) {
    throw new InvalidArgumentError(errorMessage(err));
  }
  if (name !== 'tpm2-ek' && name !== 'qemu-vtpm')
    throw new InvalidArgumentError(`the JoinService validates "tpm2-ek" or "qemu-vtpm", not "${name}"`);
  return name;
}

function parseUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidArgumentError(`expected an http:// or https:// URL, got "${value}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new InvalidArgumentError(`expected an http:// or https:// URL, got "${value}"`);
  return value;
}

/** The JoinService's command line, matching what the DaemonSet in deploy/ passes. */
/** Where the service listens, and the files and API its DaemonSet gives it. */
function withServingOptions<Args extends unknown[], Opts extends OptionValues>(command: Command<Args, Opts>) {
  return command
    .option('--host <address>', 'address to serve gRPC on', DEFAULTS.host)
    .option('--port <port>', 'gRPC port to serve joins on (0: any free port)', (v) => parsePort(v, true), DEFAULTS.port)
    .option(
      '--metrics-host <address>',
      'address of the Prometheus /metrics and /healthz endpoint (loopback by default: the metrics show every join and refusal; expose them only to your scraper)',
      DEFAULTS.metricsHost,
    )
    .option(
      '--metrics-port <port>',
      'port of the /metrics endpoint (0: any free port)',
      (v) => parsePort(v, true),
      DEFAULTS.metricsPort,
    )
    .option(
      '--health-port <port>',
      'plaintext gRPC health port for Kubernetes probes, which cannot use TLS (0: any free port)',
      (v) => parsePort(v, true),
      DEFAULTS.healthPort,
    )
    .option(
      '--config-dir <dir>',
      'mounted join-config: files attestationConfig (measurements), measurementSalt, ekRoots (PEM, pinned EK CA roots) and optionally ekIntermediates (PEM)',
      DEFAULTS.configDir,
    )
    .option(
      '--master-secret-file <file>',
      'mounted master secret (JSON with base64 key and salt)',
      DEFAULTS.masterSecretFile,
    )
    .option('--pki-dir <dir>', "the host's Kubernetes PKI (ca.crt, ca.key and the control-plane keys)", DEFAULTS.pkiDir)
    .option('--kubeconfig <file>', 'kubeconfig for the API; in-cluster credentials when not given')
    .requiredOption(
      '--api-server-endpoint <host:port>',
      'endpoint joining nodes use to reach the API server',
      parseEndpoint,
    );
}

/** Who gets a ticket, and what a ticket holds. */
function withAdmissionOptions<Args extends unknown[], Opts extends OptionValues>(command: Command<Args, Opts>) {
  return command
    .option(
      '--attestation-variant <variant>',
      'attestation variant nodes must present: tpm2-ek (EK certificate, credential activation, instance registry) or qemu-vtpm (unrooted: trusts any key, logs a warning on every validation)',
      parseVariant,
      DEFAULTS.attestationVariant,
    )
    .option(
      '--instance-registry-url <url>',
      "the platform's instance registry (GET <url>/instances?ek=<sha256>): every ticket is bound to the registered name, role and addresses",
      parseUrl,
    )
    .option(
      '--attestation-agent <socket>',
      "unix socket of the host's attestation agent (the control-plane bootstrapper's): proves to joining nodes that this service runs on an attested control-plane node",
    )
    .option(
      '--accept-unregistered-eks',
      'bare metal without a registry: admit any node whose EK certificate chains to the pinned roots, with the name and addresses it asks for, as a worker (see --control-plane-eks)',
      false,
    )
    .option(
      '--control-plane-eks <file>',
      'with --accept-unregistered-eks: the machines that may join as control planes (which receive the cluster CA keys), one EK hash "sha256:<hex>" per line as a refusal names it; without it none may',
    )
    .option(
      '--control-plane-join-timeout-seconds <seconds>',
      'how long one control-plane join may block the next',
      (v) => parseInteger(v, 10, 3_600),
      DEFAULTS.controlPlaneJoinTimeoutSeconds,
    )
    .option(
      '--challenge-ttl-ms <ms>',
      'how long a node has to answer its attestation challenge',
      (v) => parseInteger(v, 100, 120_000),
      DEFAULTS.challengeTtlMs,
    )
    .option(
      '--max-concurrent-tickets <n>',
      'join calls served at once, attestation included; more are refused at once with RESOURCE_EXHAUSTED and retry-after-ms',
      (v) => parseInteger(v, 1, 10_000),
      DEFAULTS.maxConcurrentTickets,
    )
    .option(
      '--max-connections-per-address <n>',
      'established join-port connections kept from one remote address; more are cut at accept (a node needs one; raise it when many nodes reach the service through one address)',
      (v) => parseInteger(v, 1, 1_000_000),
      DEFAULTS.maxConnections.perAddress,
    )
    .option(
      '--max-connections <n>',
      'established join-port connections kept in all; more are cut at accept',
      (v) => parseInteger(v, 1, 1_000_000),
      DEFAULTS.maxConnections.total,
    )
    .option(
      '--acceptors <n>',
      "copies of the join port's listening socket, each accepting connections (Node 20 accepts one per event-loop turn per socket; 1: the socket alone, without the helper process that makes the copies)",
      (v) => parseInteger(v, 1, 64),
      DEFAULTS.acceptors,
    );
}

export function createProgram(): Command {
  const program = new Command('constellation-joinservice')
    .description(
      "In-cluster service (DaemonSet on control-plane nodes) that checks a joining node's TPM attestation against " +
        "the cluster's measurements and, if it matches, issues a join ticket: a fresh 15-minute bootstrap token, the " +
        "CA pin, the kubelet's client and serving certificates and the node's disk key. Logs are JSON lines on stdout.",
    )
    .version(VERSION, '--version', 'print the version and exit')
    .helpOption('-h, --help', 'show this help');
  withAdmissionOptions(withServingOptions(program))
    .addOption(logLevelOption())
    .action(async ({ logLevel, ...flags }) => {
      const log = createLogger({ service: 'joinservice', level: logLevel });
      bridgeGrpcLogs(grpc, log, logLevel === 'debug');
      log.info('joinservice starting', { version: VERSION, variant: flags.attestationVariant });
      const service = await startJoinService(compileSettings(flags), log);
      await new Promise<void>((resolve) => {
        const stop = (signal: string): void => {
          log.info('joinservice stopping', { signal });
          resolve();
        };
        process.once('SIGTERM', stop);
        process.once('SIGINT', stop);
      });
      await service.close();
      log.info('joinservice stopped');
      exitWhenClosed(log);
    });
  return program;
}
