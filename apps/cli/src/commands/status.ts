import { Command } from '@commander-js/extra-typings';
import type { CommandUnknownOpts } from '@commander-js/extra-typings';
import { formatTable, outputOption, writeJson, writeResult } from './command-context.js';
import type { CommandContext } from './command-context.js';

/** `constellation status`: nodes, roles, join state; for mini also refused machines. */
export function statusCommand(context: CommandContext): CommandUnknownOpts {
  return new Command('status')
    .description(
      'show nodes, roles, join state and versions of the cluster; for mini also machines that were refused, and why',
    )
    .addHelpText('after', '\nExamples:\n  constellation status\n  constellation status --output json\n')
    .addOption(outputOption())
    .action(async (options) => {
      const { clusterStatus } = await import('../status-command.js');
      const status = await clusterStatus(context.workspace());
      if (options.output === 'json') {
        writeJson(status);
        return;
      }
      const rows = [
        ['NODE', 'ROLE', 'READY', 'ATTESTATION', 'DETAIL'],
        ...status.nodes.map((node) => [
          node.name,
          node.role,
          node.ready ? 'True' : 'False',
          node.attestation,
          node.joined ? `joined, Kubernetes ${node.kubernetesVersion}` : `NOT JOINED: ${node.problem ?? ''}`,
        ]),
      ];
      const lines = [`cluster ${status.clusterId}\n`, ...formatTable(rows)];
      writeResult(lines.join(''));
    });
}
