import { Command } from '@commander-js/extra-typings';
import type { CommandUnknownOpts } from '@commander-js/extra-typings';
import { outputOption, writeJson, writeResult } from './command-context.js';
import type { CommandContext } from './command-context.js';

/** `constellation init`: create the cluster from the first control-plane node. */
export function initCommand(context: CommandContext): CommandUnknownOpts {
  return new Command('init')
    .alias('apply')
    .addHelpText(
      'after',
      '\nExamples:\n  constellation init\n  constellation --workspace ./prod init --output json\n  constellation init --force   # after a failed init, when the old master secret is not needed\n  constellation init --conformance   # with kube-proxy, for the Kubernetes conformance suite\n',
    )
    .description(
      'create the cluster: dial the first control-plane node over attested TLS, verify it against the ' +
        'configured measurements (nothing is sent before that), send the master secret, show progress, ' +
        'write kubeconfig, state and master secret (0600)',
    )
    .option(
      '--force',
      'replace an existing master secret in the workspace (it may be the only way to recover the cluster it belongs to)',
      false,
    )
    .option(
      '--conformance',
      "conformance mode: the cluster runs kube-proxy (kubeadm's add-on: Services by ClusterIP and NodePort on every node), as the Kubernetes conformance suite expects; without it kubeadm init skips kube-proxy",
      false,
    )
    .addOption(outputOption())
    .action(async (options) => {
      const { runInit } = await import('../init-command.js');
      const result = await runInit({
        workspace: context.workspace(),
        print: context.print,
        force: options.force,
        conformance: options.conformance,
      });
      if (options.output === 'json') writeJson(result);
      else
        writeResult(
          `cluster ${result.clusterId} created\nkubeconfig: ${result.kubeconfig}\nstate: ${result.state}\nmaster secret: ${result.masterSecret}\n`,
        );
    });
}
