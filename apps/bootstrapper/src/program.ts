import { spawn } from 'node:child_process';
import * as grpc from '@grpc/grpc-js';
import { Command, InvalidArgumentError, Option } from '@commander-js/extra-typings';
import { TpmIssuer, readPemCertificates, unrootedVariantWarning } from '@constellation/attestation';
import type { ServiceCheck } from '@constellation/atls';
import type { Issuer } from '@constellation/attestation';
import type { Logger } from '@constellation/logger';
import { UsageError, logLevelOption, parseInteger, parsePort } from '@constellation/command-line';
import { bridgeGrpcLogs, createWinstonLogger } from '@constellation/logger';
import { NodeLock } from '@constellation/nodelock';
import { prepareNode } from '@constellation/node-prep';
import { StateDisk } from '@constellation/state-disk';
import { Tpm } from '@constellation/tpm';
import { serveAgentOnControlPlane } from './attestation-agent.js';
import { Bootstrapper } from './bootstrapper.js';
import { joinServiceCheck } from './join-service-check.js';
import { exitAction, rebootAction } from './fatal-action.js';
import { MetadataClient } from './metadata-client.js';
import { nodePaths } from './node-paths.js';
import { RecentLog } from './recent-log.js';
import { parseTpmAddress, tpmTransport } from './tpm-address.js';
import { serveVerifyEndpoint } from './verify-endpoint.js';
import { VERSION } from './version.js';
import { errorMessage } from '@constellation/errors';

function runCommand(command: string): () => Promise<void> {
  return () =>
    new Promise((resolve, reject) => {
      const [program = 'true', ...args] = command.split(' ').filter((part) => part !== '');
      const child = spawn(program, args, { stdio: 'ignore' });
      child.once('error', reject);
      child.once('close', (code) => {
        if (code === 0) resolve();
        else reject(new Error(`${command} exited with ${String(code)}`));
      });
    });
}

function parsePcrList(value: string): number[] {
  const pcrs = value.split(',').map((part) => Number(part.trim()));
  if (pcrs.length === 0 || pcrs.some((pcr) => !Number.isInteger(pcr) || pcr < 0 || pcr > 23))
    throw new InvalidArgumentError(`expected comma-separated PCR indexes from 0 to 23, got "${value}"`);
  return pcrs;
}

async function readPemOption(file: string | undefined, option: string): Promise<Buffer[]> {
  if (file === undefined)
    throw new UsageError(
      `${option} is required with --attestation-variant=tpm2-ek: the node checks the JoinService's TPM identity against the pinned EK CA roots before it uses a join ticket`,
    );
  try {
    return (await readPemCertificates(file)).certificates;
  } catch (err) {
    throw new UsageError(`${option}: ${errorMessage(err)}`);
  }
}

/** The node's attestation issuer: rooted in the TPM's EK certificate unless configured otherwise. */
async function createIssuer(
  tpm: Tpm,
  variant: 'tpm2-ek' | 'qemu-vtpm',
  ekIntermediates: readonly Uint8Array[],
  logger: Logger,
): Promise<Issuer> {
  if (variant === 'qemu-vtpm') {
    const issuer = new TpmIssuer(tpm);
    logger.warn(unrootedVariantWarning(issuer.variant));
    return issuer;
  }
  const issuer = await TpmIssuer.rooted(tpm, { ekIntermediates });
  logger.info('attesting with the TPM endorsement key', {
    variant: issuer.variant.name,
    akName: issuer.rooted?.akName.toString('hex'),
  });
  return issuer;
}

/** The bootstrapper's command line. Configuration is parsed here once and passed down typed. */
export function createProgram(): Command {
  const program = new Command('constellation-bootstrapper')
    .description(
      'Node daemon baked into the node image. On a fresh node it serves the InitServer (attested TLS) and polls the ' +
        'JoinService at the same time; whichever passes its point of no return first takes the one-way node lock ' +
        '(PCR 15), then the node runs kubeadm init or join. A node whose state disk already belongs to a cluster ' +
        'rejoins instead. Logs are JSON lines on stdout.',
    )
    .version(VERSION, '--version', 'print the version and exit')
    .helpOption('-h, --help', 'show this help')
    .option('--root <dir>', 'root directory for every file the bootstrapper reads and writes', '/')
    .option(
      '--tpm <address>',
      'the TPM: a device path, swtpm:<unix socket path>, or swtpm:<host>:<port>',
      parseTpmAddress,
      parseTpmAddress('/dev/tpmrm0'),
    )
    .addOption(
      new Option(
        '--attestation-variant <variant>',
        "how the node attests: tpm2-ek (the TPM's EK certificate, credential activation, quotes) or qemu-vtpm (quotes only: proves no identity)",
      )
        .choices(['tpm2-ek', 'qemu-vtpm'] as const)
        .default('tpm2-ek' as const),
    )
    .option(
      '--ek-intermediates <file>',
      "PEM file of the EK CA's intermediate certificates, sent with the TPM's EK certificate (tpm2-ek)",
    )
    .option(
      '--ek-roots <file>',
      "PEM file of the pinned EK CA roots (tpm2-ek, required): the JoinService's host must prove its TPM identity against them before this node uses a join ticket",
    )
    .option(
      '--measured-pcrs <list>',
      "PCRs the node image measures; the JoinService's host must show this node's own values",
      parsePcrList,
      [4, 8, 9, 11, 12, 13],
    )
    .option('--state-disk <device>', 'LUKS2 state disk: block device or image file', '/dev/disk/by-partlabel/state')
    .addOption(
      new Option('--disk-kdf <cost>', 'LUKS key-slot KDF: default (argon2id) or fast (PBKDF2; keys are random)')
        .choices(['default', 'fast'] as const)
        .default('default' as const),
    )
    .option('--metadata-url <url>', 'instance metadata service', 'http://10.42.0.1:8080')
    .option('--node-name <name>', 'identify to the metadata service by name (when machines share an address)')
    .option('--init-host <address>', 'address of the InitServer and RecoveryServer', '0.0.0.0')
    .option('--init-port <port>', 'InitServer port (0: any free port)', (v) => parsePort(v, true), 9000)
    .option(
      '--verify-port <port>',
      'after bootstrapping, keep an attested endpoint for `constellation verify` (0: any free port; -1: none)',
      (v) => (v === '-1' ? -1 : parsePort(v, true)),
      30081,
    )
    .option(
      '--recovery-port <port>',
      'RecoveryServer port on control planes (0: any free port)',
      (v) => parsePort(v, true),
      9999,
    )
    .option(
      '--manifest-url <template>',
      'node preparation: signed component manifest URL template ({{.Board}}, {{.OSVersion}}, {{.KubernetesVersion}}); none: no preparation',
    )
    .option(
      '--keyring <file>',
      'node preparation: pinned armored keyring (inside --root)',
      '/etc/constellation/pubring.asc',
    )
    .option('--no-verify-signatures', 'node preparation: do not check the manifest signature (warns loudly)')
    .option('--kubeadm <program>', 'kubeadm binary', 'kubeadm')
    .option('--api-server-bind-port <port>', 'port the API server binds on control planes', (v) => parsePort(v), 6443)
    .option('--default-kubernetes-version <version>', 'version when the Init request names none', 'v1.32.9')
    .option(
      '--kubelet-start-command <command>',
      'how to start the kubelet once the node belongs to a cluster',
      'systemctl start kubelet',
    )
    .option(
      '--join-backoff-max-ms <ms>',
      "cap of the randomised wait between join attempts; the JoinService's retry-after-ms still wins (mini uses a short cap: its JoinService starts after the nodes)",
      (v) => parseInteger(v, 100, 600_000),
      30_000,
    )
    .addOption(
      new Option('--on-fatal <action>', 'after a failure past the point of no return: reboot, or exit with code 75')
        .choices(['reboot', 'exit'] as const)
        .default('reboot' as const),
    )
    .addOption(logLevelOption())
    .action(async (options) => {
      const recentLog = new RecentLog();
      const logger = createWinstonLogger({
        service: 'bootstrapper',
        level: options.logLevel,
        streams: [process.stdout, recentLog],
      });
      bridgeGrpcLogs(grpc, logger, options.logLevel === 'debug');
      logger.info('bootstrapper starting', { version: VERSION, root: options.root, tpm: options.tpm.kind });
      // Configuration first, so a bad flag never leaves a TPM connection open.
      const rooted = options.attestationVariant === 'tpm2-ek';
      const ekRoots = rooted ? await readPemOption(options.ekRoots, '--ek-roots') : [];
      const ekIntermediates =
        options.ekIntermediates === undefined ? [] : await readPemOption(options.ekIntermediates, '--ek-intermediates');
      const tpm = new Tpm(tpmTransport(options.tpm));
      const metadata = new MetadataClient(options.metadataUrl, options.nodeName);
      let issuer: Issuer;
      let checkJoinService: ServiceCheck | undefined;
      try {
        issuer = await createIssuer(tpm, options.attestationVariant, ekIntermediates, logger);
        checkJoinService = rooted
          ? await joinServiceCheck({
              tpm,
              metadata,
              ekRoots,
              ekIntermediates,
              measuredPcrs: options.measuredPcrs,
              logger,
            })
          : undefined;
      } catch (err) {
        await tpm.close();
        throw err;
      }
      const bootstrapper = new Bootstrapper(
        {
          paths: nodePaths(options.root),
          tpm,
          issuer,
          disk: new StateDisk({ device: options.stateDisk, kdf: options.diskKdf }),
          lock: new NodeLock(tpm),
          metadata,
          ...(checkJoinService === undefined ? {} : { joinServiceCheck: checkJoinService }),
          logger,
          recentLog,
          kubeadm: { program: options.kubeadm, env: process.env, timeoutMs: 10 * 60_000 },
          apiServerBindPort: options.apiServerBindPort,
          defaultKubernetesVersion: options.defaultKubernetesVersion,
          startKubelet: runCommand(options.kubeletStartCommand),
          ...(options.manifestUrl === undefined
            ? {}
            : {
                prepareNode: async (kubernetesVersion: string) => {
                  await prepareNode({
                    root: options.root,
                    osReleasePath: '/usr/lib/os-release',
                    requestVersion: kubernetesVersion,
                    seedFile: '/etc/kubernetes/installer/kubelet.env',
                    manifestUrlTemplate: options.manifestUrl ?? '',
                    verifySignatures: options.verifySignatures,
                    keyringPath: options.keyring,
                    kubeletEnvPath: '/etc/kubernetes/kubelet.env',
                    reboot: () => Promise.resolve(),
                    retry: { tries: 5, pauseMs: 2_000, timeoutMs: 60_000 },
                    apiRetry: { tries: 3, pauseMs: 5_000, timeoutMs: 10_000 },
                    logger,
                  });
                },
              }),
        },
        {
          initHost: options.initHost,
          initPort: options.initPort,
          recoveryPort: options.recoveryPort,
          joinInitialBackoffMs: 1_000,
          joinMaxBackoffMs: options.joinBackoffMaxMs,
          requestTimeoutMs: 30_000,
          fatal: options.onFatal === 'reboot' ? rebootAction(logger) : exitAction(logger),
        },
      );
      const outcome = await bootstrapper.run();
      logger.info('bootstrapper done', { outcome });
      if (options.verifyPort < 0) {
        await tpm.close();
        return;
      }
      const endpoint = await serveVerifyEndpoint(issuer, options.initHost, options.verifyPort, logger);
      const agent = await serveAgentOnControlPlane(bootstrapper.context);
      await new Promise<void>((resolve) => {
        process.once('SIGTERM', () => {
          resolve();
        });
        process.once('SIGINT', () => {
          resolve();
        });
      });
      await agent?.close();
      await endpoint.close();
      await tpm.close();
    });
  return program;
}
