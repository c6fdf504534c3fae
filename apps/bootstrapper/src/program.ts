import { Command, Option } from '@commander-js/extra-typings';
import type { OptionValues } from '@commander-js/extra-typings';
import { logLevelOption, parseInteger, parsePort } from '@constellation/command-line';
import { createLogger } from '@constellation/logger';
import {
  BOOTSTRAPPER_DEFAULTS as DEFAULTS,
  compileConfig,
  parseNameList,
  parsePcrList,
  parseVersionOption,
} from './config.js';
import { openNode } from './open-node.js';
import { RecentLog } from './recent-log.js';
import { parseCommandLine } from './shell-command.js';
import { parseTpmAddress } from './tpm-address.js';
import { VERSION } from './version.js';

/** Which TPM, how the node proves itself, and what it checks the JoinService against. */
function withIdentityOptions<Args extends unknown[], Opts extends OptionValues>(command: Command<Args, Opts>) {
  return command
    .option(
      '--tpm <address>',
      'the TPM: a device path, swtpm:<unix socket path>, or swtpm:<host>:<port>',
      parseTpmAddress,
      parseTpmAddress(DEFAULTS.tpm),
    )
    .addOption(
      new Option(
        '--attestation-variant <variant>',
        "how the node attests: tpm2-ek (the TPM's EK certificate, credential activation, quotes) or qemu-vtpm (quotes only: proves no identity)",
      )
        .choices(['tpm2-ek', 'qemu-vtpm'] as const)
        .default(DEFAULTS.attestationVariant),
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
      [...DEFAULTS.measuredPcrs],
    )
    .option(
      '--event-log <file>',
      "the boot's TCG event log (crypto-agile), sent with every attestation together with the bootstrapper's own events; missing: none is sent (the verifier then compares PCR values only)",
      DEFAULTS.eventLog,
    )
    .option(
      '--runtime-event-log <file>',
      'where the bootstrapper logs what it extends itself (the PCR 15 cluster-ID mark) during this boot',
      DEFAULTS.runtimeEventLog,
    );
}

/** The machine: its root, state disk, metadata service and ports. */
function withNodeOptions<Args extends unknown[], Opts extends OptionValues>(command: Command<Args, Opts>) {
  return command
    .option('--root <dir>', 'root directory for every file the bootstrapper reads and writes', DEFAULTS.root)
    .option('--state-disk <device>', 'LUKS2 state disk: block device or image file', DEFAULTS.stateDisk)
    .addOption(
      new Option(
        '--disk-kdf <cost>',
        'LUKS key-slot KDF: default (argon2id) or fast (PBKDF2; the keys are random; for tests and mini only)',
      )
        .choices(['default', 'fast'] as const)
        .default('default' as const),
    )
    .option(
      '--state-mount <dir>',
      'map the state disk with dm-crypt and mount it on <dir> (a node image: /run/state), binding /etc/kubernetes and /var/lib/kubelet from it so they survive a reboot, encrypted',
    )
    .option('--metadata-url <url>', 'instance metadata service', DEFAULTS.metadataUrl)
    .option('--node-name <name>', 'identify to the metadata service by name (when machines share an address)')
    .option('--init-host <address>', 'address of the InitServer and RecoveryServer', DEFAULTS.initHost)
    .option('--init-port <port>', 'InitServer port (0: any free port)', (v) => parsePort(v, true), DEFAULTS.initPort)
    .option(
      '--verify-port <port>',
      'after bootstrapping, keep an attested endpoint for `constellation verify` (0: any free port; -1: none, for tests)',
      (v) => (v === '-1' ? -1 : parsePort(v, true)),
      DEFAULTS.verifyPort,
    )
    .option(
      '--recovery-port <port>',
      'RecoveryServer port on control planes (0: any free port)',
      (v) => parsePort(v, true),
      DEFAULTS.recoveryPort,
    );
}

/** Node preparation, kubeadm and the kubelet, and the join and failure policy. */
function withKubernetesOptions<Args extends unknown[], Opts extends OptionValues>(command: Command<Args, Opts>) {
  return command
    .option(
      '--manifest-url <template>',
      'node preparation: signed component manifest URL template ({{.Board}}, {{.OSVersion}}, {{.KubernetesVersion}}); none: no preparation',
    )
    .option('--keyring <file>', 'node preparation: pinned armored keyring (inside --root)', DEFAULTS.keyring)
    .option('--no-verify-signatures', 'node preparation: do not check the manifest signature (warns loudly)')
    .option('--kubeadm <program>', 'kubeadm binary', DEFAULTS.kubeadm)
    .option(
      '--api-server-bind-port <port>',
      'port the API server binds on control planes',
      (v) => parsePort(v),
      DEFAULTS.apiServerBindPort,
    )
    .option(
      '--default-kubernetes-version <version>',
      'version when the Init request names none',
      DEFAULTS.kubernetesVersion,
    )
    .option(
      '--minimum-kubernetes-version <version>',
      'refuse to set the node up with an older Kubernetes, whoever names it (the init request, a join ticket): downgrade protection; default: no minimum',
      parseVersionOption,
    )
    .option(
      '--kubelet-start-command <command>',
      'how to start the kubelet once the node belongs to a cluster: a program and its arguments, quoted like a shell where they contain spaces, run without a shell (tests that run no kubelet replace it)',
      (v) => {
        parseCommandLine(v);
        return v;
      },
      DEFAULTS.kubeletStartCommand,
    )
    .option(
      '--kubeadm-patches <dir>',
      "node image tuning: kubeadm's patches directory for init and join (files like kubeletconfiguration+merge.yaml or etcd+json.json), an absolute path as kubeadm sees it",
    )
    .option(
      '--kube-proxy-config <file>',
      "node image tuning: KubeProxyConfiguration fields (YAML, kubeproxy.config.k8s.io/v1alpha1) for this machine, e.g. mode: nftables; merged into the configuration kubeadm init gives the cluster's kube-proxy when the init request turns it on (conformance mode); checked at start, an unknown field or bad value is named",
    )
    .option(
      '--kubeadm-ignore-preflight-errors <checks>',
      "node image tuning: comma-separated kubeadm preflight checks (kubeadm's names, e.g. SystemVerification) that only warn on this image",
      (v) => parseNameList(v, '--kubeadm-ignore-preflight-errors'),
      [] as string[],
    )
    .addOption(
      new Option(
        '--image-pull-policy <policy>',
        "kubeadm's image pull policy for the control plane's images; Never when the node image carries them preloaded",
      )
        .choices(['Always', 'IfNotPresent', 'Never'] as const)
        .default('IfNotPresent' as const),
    )
    .option(
      '--join-backoff-max-ms <ms>',
      "cap of the randomised wait between join attempts; the JoinService's retry-after-ms still wins (mini uses a short cap: its JoinService starts after the nodes)",
      (v) => parseInteger(v, 100, 600_000),
      DEFAULTS.joinBackoffMaxMs,
    )
    .addOption(
      new Option(
        '--on-fatal <action>',
        'after a failure past the point of no return: reboot, or exit with code 75 (for tests and mini)',
      )
        .choices(['reboot', 'exit'] as const)
        .default('reboot' as const),
    );
}

/** The bootstrapper's command line: flags → compileConfig (files read, checked once) → runNode. */
export function createProgram(): Command {
  const program = new Command('constellation-bootstrapper')
    .description(
      'Node daemon baked into the node image. On a fresh node it serves the InitServer (attested TLS) and polls the ' +
        'JoinService at the same time; whichever passes its point of no return first takes the one-way node lock ' +
        '(PCR 15), then the node runs kubeadm init or join. A node whose state disk already belongs to a cluster ' +
        'rejoins instead. Logs are JSON lines on stdout.',
    )
    .version(VERSION, '--version', 'print the version and exit')
    .helpOption('-h, --help', 'show this help');
  withKubernetesOptions(withIdentityOptions(withNodeOptions(program)))
    .addOption(logLevelOption())
    .action(async ({ logLevel, ...flags }) => {
      const recentLog = new RecentLog();
      const logger = createLogger({
        service: 'bootstrapper',
        level: logLevel,
        streams: [process.stdout, recentLog],
      });
      logger.info('bootstrapper starting', { version: VERSION, root: flags.root, tpm: flags.tpm.kind });
      // Configuration first, so a bad flag never leaves a TPM connection open.
      const config = await compileConfig(flags);
      const node = openNode(config, logger);
      // The rest of the program (gRPC, attested TLS, the issuer) loads while the node is assessed.
      const { runNode } = await import('./run-node.js').catch(async (err: unknown) => {
        await node.assessment.catch(() => undefined);
        await node.tpm.close();
        throw err;
      });
      await runNode(config, node, { logger, recentLog, grpcDebug: logLevel === 'debug' });
    });
  return program;
}
