import { spawn } from 'node:child_process';
import { Command } from '@commander-js/extra-typings';
import { logLevelOption, parseInteger } from '@constellation/command-line';
import { createLogger } from '@constellation/logger';
import { DEFAULT_MINIMUM_KUBERNETES_VERSION, OS_UPDATE_STAGED_EXIT_CODE, prepareNode } from '@constellation/node-prep';
import { NODE_PREP_DEFAULTS as DEFAULTS } from './config.js';
import { VERSION } from './version.js';

/** `constellation-node-prep`: flags mirror tectonic-torcx's bootstrap knobs where they still make sense. */
export function createProgram(): Command {
  const program = new Command('constellation-node-prep')
    .description(
      'Prepares a node before kubeadm runs: determines the Kubernetes version (forced, API server, local seed), ' +
        'fetches the component manifest for this board, OS version and Kubernetes version, checks its detached ' +
        'OpenPGP signature against the pinned keyring, installs the components by digest, and writes kubelet.env ' +
        'last. Until kubelet.env exists the kubelet does not start. Logs are JSON lines on stdout.',
    )
    .version(VERSION, '--version', 'print the version and exit')
    .helpOption('-h, --help', 'show this help')
    .option('--root <dir>', 'root directory every path below is inside of', DEFAULTS.root)
    .option(
      '--force-kube-version <version>',
      'use this Kubernetes version and skip detection (with --api-server-url it must still fit the API server under the version-skew policy)',
    )
    .option('--api-server-url <url>', 'API server (https) to ask for /version (the local seed file is the fallback)')
    .option(
      '--api-server-ca <file>',
      'cluster CA (PEM) the API server is pinned to; without it /version is not asked',
      DEFAULTS.apiServerCa,
    )
    .option(
      '--minimum-kube-version <version>',
      `refuse any Kubernetes version older than this (downgrade protection; ${DEFAULT_MINIMUM_KUBERNETES_VERSION} when not given)`,
    )
    .option(
      '--manifest-url <template>',
      'component manifest URL template ({{.Board}}, {{.OSVersion}}, {{.KubernetesVersion}}); a path or file:// URL works too (components themselves are always http(s))',
      DEFAULTS.manifestUrl,
    )
    .option('--no-verify-signatures', 'do not fetch or check the manifest signature (warns loudly)')
    .option(
      '--keyring <file>',
      'pinned armored keyring the manifest must be signed with (root-owned, not group- or world-writable; every key block is read)',
      DEFAULTS.keyring,
    )
    .option(
      '--version-seed <file>',
      'local seed with KUBELET_IMAGE_TAG, also the kubelet.env template',
      DEFAULTS.versionSeed,
    )
    .option('--kubelet-env-path <file>', 'the marker written last', DEFAULTS.kubeletEnvPath)
    .option(
      '--serial-file <file>',
      'where the highest accepted manifest serial is kept (rollback protection)',
      DEFAULTS.serialFile,
    )
    .option(
      '--version-record <file>',
      "where the highest Kubernetes version prepared and the API server's last answer are kept (an older version is never prepared)",
      DEFAULTS.versionRecord,
    )
    .option(
      '--install-dir <dir>',
      'a directory components may be installed under (repeatable)',
      (dir: string, dirs: string[] | undefined) => [...(dirs ?? []), dir],
    )
    .option('--os-release <file>', 'OS facts', DEFAULTS.osRelease)
    .option(
      '--os-update-command <command>',
      `OS update hook: exit 0 means nothing staged, ${OS_UPDATE_STAGED_EXIT_CODE} an update staged (reboot), anything else a failure`,
    )
    .option(
      '--reboot-command <command>',
      'how to reboot when an OS update is staged (a failing reboot fails the run, so the unit retries)',
      DEFAULTS.rebootCommand,
    )
    .option(
      '--fetch-tries <n>',
      'tries per download (non-2xx answers are retried)',
      (v) => parseInteger(v, 1, 20),
      DEFAULTS.fetchTries,
    )
    .addOption(logLevelOption())
    .addHelpText(
      'after',
      '\nExamples:\n  constellation-node-prep --api-server-url https://10.42.0.10:6443\n  constellation-node-prep --force-kube-version v1.37.2 --manifest-url file:///srv/manifests/{{.KubernetesVersion}}.json\n',
    )
    .action(async (options) => {
      const logger = createLogger({ service: 'node-prep', level: options.logLevel });
      logger.info('node preparation starting', { version: VERSION, root: options.root });
      const split = (command: string): string[] => command.split(' ').filter((part) => part !== '');
      const result = await prepareNode({
        root: options.root,
        osReleasePath: options.osRelease,
        ...(options.forceKubeVersion === undefined ? {} : { forcedVersion: options.forceKubeVersion }),
        ...(options.apiServerUrl === undefined
          ? {}
          : { apiServerUrl: options.apiServerUrl, apiServerCaPath: options.apiServerCa }),
        ...(options.minimumKubeVersion === undefined ? {} : { minimumVersion: options.minimumKubeVersion }),
        serialPath: options.serialFile,
        versionRecordPath: options.versionRecord,
        ...(options.installDir === undefined ? {} : { allowedInstallDirs: options.installDir }),
        seedFile: options.versionSeed,
        manifestUrlTemplate: options.manifestUrl,
        verifySignatures: options.verifySignatures,
        keyringPath: options.keyring,
        kubeletEnvPath: options.kubeletEnvPath,
        ...(options.osUpdateCommand === undefined ? {} : { osUpdateCommand: split(options.osUpdateCommand) }),
        reboot: () => runReboot(split(options.rebootCommand)),
        retry: { tries: options.fetchTries, pauseMs: DEFAULTS.fetchPauseMs, timeoutMs: DEFAULTS.fetchDeadlineMs },
        apiRetry: DEFAULTS.apiRetry,
        logger,
      });
      logger.info('node preparation done', { ...result });
    });
  return program;
}

/** Starts the reboot; rejects when the command cannot run or exits non-zero, so the run fails and the unit retries. */
function runReboot(command: readonly string[]): Promise<void> {
  const [program = 'systemctl', ...args] = command;
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { stdio: 'ignore' });
    child.once('error', (err) => {
      reject(new Error(`reboot command ${program} cannot run: ${err.message}`));
    });
    child.once('close', (code, signal) => {
      if (code === 0) resolve();
      else
        reject(
          new Error(
            `reboot command ${command.join(' ')} ${code === null ? `was killed by ${String(signal)}` : `exited with ${code}`}`,
          ),
        );
    });
  });
}
