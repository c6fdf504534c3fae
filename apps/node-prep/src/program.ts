import { spawn } from 'node:child_process';
import { Command } from '@commander-js/extra-typings';
import { logLevelOption, parseInteger } from '@constellation/command-line';
import { createWinstonLogger } from '@constellation/logger';
import { prepareNode } from '@constellation/node-prep';
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
    .option('--root <dir>', 'root directory every path below is inside of', '/')
    .option('--force-kube-version <version>', 'use this Kubernetes version and skip detection')
    .option('--api-server-url <url>', 'API server to ask for /version (the local seed file is the fallback)')
    .option(
      '--manifest-url <template>',
      'component manifest URL template ({{.Board}}, {{.OSVersion}}, {{.KubernetesVersion}}); a path or file:// URL works too',
      'https://artifacts.constellation.invalid/manifests/{{.Board}}/{{.OSVersion}}/{{.KubernetesVersion}}.json',
    )
    .option('--no-verify-signatures', 'do not fetch or check the manifest signature (warns loudly)')
    .option(
      '--keyring <file>',
      'pinned armored keyring the manifest must be signed with',
      '/etc/constellation/pubring.asc',
    )
    .option(
      '--version-seed <file>',
      'local seed with KUBELET_IMAGE_TAG, also the kubelet.env template',
      '/etc/kubernetes/installer/kubelet.env',
    )
    .option('--kubelet-env-path <file>', 'the marker written last', '/etc/kubernetes/kubelet.env')
    .option('--os-release <file>', 'OS facts', '/usr/lib/os-release')
    .option('--os-update-command <command>', 'command whose output "update staged" means an OS update awaits a reboot')
    .option('--reboot-command <command>', 'how to reboot when an OS update is staged', 'systemctl reboot')
    .option('--fetch-tries <n>', 'tries per download (non-2xx answers are retried)', (v) => parseInteger(v, 1, 20), 5)
    .addOption(logLevelOption())
    .addHelpText(
      'after',
      '\nExamples:\n  constellation-node-prep --api-server-url https://10.42.0.10:6443\n  constellation-node-prep --force-kube-version v1.32.9 --manifest-url file:///srv/manifests/{{.KubernetesVersion}}.json\n',
    )
    .action(async (options) => {
      const logger = createWinstonLogger({ service: 'node-prep', level: options.logLevel });
      logger.info('node preparation starting', { version: VERSION, root: options.root });
      const split = (command: string): string[] => command.split(' ').filter((part) => part !== '');
      const result = await prepareNode({
        root: options.root,
        osReleasePath: options.osRelease,
        ...(options.forceKubeVersion === undefined ? {} : { forcedVersion: options.forceKubeVersion }),
        ...(options.apiServerUrl === undefined ? {} : { apiServerUrl: options.apiServerUrl }),
        seedFile: options.versionSeed,
        manifestUrlTemplate: options.manifestUrl,
        verifySignatures: options.verifySignatures,
        keyringPath: options.keyring,
        kubeletEnvPath: options.kubeletEnvPath,
        ...(options.osUpdateCommand === undefined ? {} : { osUpdateCommand: split(options.osUpdateCommand) }),
        reboot: () =>
          new Promise((resolve) => {
            const [program = 'systemctl', ...args] = split(options.rebootCommand);
            spawn(program, args, { stdio: 'ignore' }).once('close', () => {
              resolve();
            });
          }),
        retry: { tries: options.fetchTries, pauseMs: 5_000, timeoutMs: 60_000 },
        apiRetry: { tries: 3, pauseMs: 10_000, timeoutMs: 10_000 },
        logger,
      });
      logger.info('node preparation done', { ...result });
    });
  return program;
}
