import { Command } from '@commander-js/extra-typings';
import type { CommandUnknownOpts } from '@commander-js/extra-typings';
import { outputOption, writeJson, writeResult } from './command-context.js';
import type { CommandContext } from './command-context.js';

/** `constellation recover`: hand a waiting control plane its disk key after a full shutdown. */
export function recoverCommand(context: CommandContext): CommandUnknownOpts {
  return new Command('recover')
    .description('after a full control-plane shutdown, hand a waiting control-plane node its disk key')
    .requiredOption('--endpoint <host[:port]>', 'control-plane node waiting for recovery (port 9999 by default)')
    .addHelpText('after', '\nExamples:\n  constellation recover --endpoint 10.42.0.10\n')
    .addOption(outputOption())
    .action(async (options) => {
      const { recoverNode } = await import('../recover-command.js');
      const answer = await recoverNode(context.workspace(), options.endpoint, context.print);
      if (options.output === 'json') writeJson(answer);
      else
        writeResult(
          `${answer.endpoint} recovered: state disk ${answer.diskUuid} open, cluster ${answer.clusterIdHex}\n`,
        );
    });
}
