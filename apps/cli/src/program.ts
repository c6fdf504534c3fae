import { resolve } from 'node:path';
import { Command } from '@commander-js/extra-typings';
import { terminalSafe } from '@constellation/command-line';
import type { CommandContext } from './commands/command-context.js';
import { configCommand } from './commands/config-generate.js';
import { eventlogCommand } from './commands/eventlog.js';
import { fetchMeasurementsCommand } from './commands/fetch-measurements.js';
import { initCommand } from './commands/init.js';
import { measurementsCommand } from './commands/measurements-from-eventlog.js';
import { miniCommand } from './commands/mini.js';
import { recoverCommand } from './commands/recover.js';
import { statusCommand } from './commands/status.js';
import { verifyCommand } from './commands/verify.js';
import { VERSION } from './version.js';

/**
 * `constellation`: the operator's command line. Each command lives in `commands/<command>.ts` and
 * imports its implementation when it runs, so `--help` or one command does not load all of them
 * (the bundle puts each in its own chunk: `bundle.mjs --split`).
 */
export function createProgram(): Command {
  const program = new Command('constellation')
    .description('Create, verify and recover attested Kubernetes clusters, or run one on this machine.')
    .version(VERSION, '--version', 'print the version and exit')
    .helpOption('-h, --help', 'show help for a command')
    .option('--workspace <dir>', 'directory holding the config, state, kubeconfig and master secret', '.')
    .addHelpText(
      'after',
      '\nExamples:\n' +
        '  constellation mini up                 # a local cluster: 1 control plane, 2 workers\n' +
        '  constellation mini down               # stop it and remove its files\n' +
        '  constellation config generate         # write a commented constellation-conf.yaml\n' +
        '  constellation init                    # create the cluster described by the config\n',
    );
  const context: CommandContext = {
    workspace: () => resolve(program.opts().workspace),
    print: (line) => process.stderr.write(`${terminalSafe(line)}\n`),
  };
  return program
    .addCommand(
      configCommand(context).addCommand(measurementsCommand(context)).addCommand(fetchMeasurementsCommand(context)),
    )
    .addCommand(initCommand(context))
    .addCommand(verifyCommand(context))
    .addCommand(statusCommand(context))
    .addCommand(recoverCommand(context))
    .addCommand(miniCommand(context))
    .addCommand(eventlogCommand(context));
}
