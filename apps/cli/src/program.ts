import { Command, Option } from '@commander-js/extra-typings';
import { NotBuiltYetError, parseInteger } from '@constellation/command-line';
import { VERSION } from './version.js';

const notBuilt = (what: string) => (): never => {
  throw new NotBuiltYetError(what, 'issue 7');
};

const outputOption = (): Option<'--output <format>', undefined, 'text', 'text' | 'json'> =>
  new Option('--output <format>', 'how to print the result')
    .choices(['text', 'json'] as const)
    .default('text' as const);

/** `constellation`: the operator's command line. */
export function createProgram(): Command {
  const program = new Command('constellation')
    .description('Create, verify and recover attested Kubernetes clusters, or run one on this machine.')
    .version(VERSION, '--version', 'print the version and exit')
    .helpOption('-h, --help', 'show help for a command')
    .addOption(
      new Option('--log-format <format>', 'format of log lines on stderr')
        .choices(['text', 'json'] as const)
        .default('text' as const),
    )
    .option('--workspace <dir>', 'directory holding the config, state, kubeconfig and master secret', '.')
    .addHelpText(
      'after',
      '\nExamples:\n' +
        '  constellation mini up                 # a local cluster: 1 control plane, 2 workers\n' +
        '  constellation config generate         # write a commented constellation-conf.yaml\n' +
        '  constellation init                    # create the cluster described by the config\n' +
        '  constellation verify --node 10.0.0.5  # attest a node and compare its PCRs\n',
    );

  const config = program.command('config').description('work with the cluster configuration file');
  config
    .command('generate')
    .description('write a commented constellation-conf.yaml with defaults to edit')
    .option('--force', 'overwrite an existing file', false)
    .action(notBuilt('constellation config generate'));

  program
    .command('init')
    .alias('apply')
    .description(
      'create the cluster: dial the first control-plane node over attested TLS, verify it against the ' +
        'configured measurements, send the master secret, stream progress, write kubeconfig and state',
    )
    .option('--yes', 'do not ask for confirmation', false)
    .action(notBuilt('constellation init'));

  program
    .command('verify')
    .description('attest a node on demand and print its PCRs next to the expected values')
    .requiredOption('--node <host[:port]>', 'node to attest')
    .addOption(outputOption())
    .action(notBuilt('constellation verify'));

  program
    .command('status')
    .description('show nodes, roles, join state and versions of the cluster')
    .addOption(outputOption())
    .action(notBuilt('constellation status'));

  program
    .command('recover')
    .description('after a full control-plane shutdown, hand a waiting control-plane node its disk key')
    .requiredOption('--endpoint <host[:port]>', 'control-plane node waiting for recovery (port 9999 by default)')
    .action(notBuilt('constellation recover'));

  const mini = program.command('mini').description('run a whole attested cluster on this machine');
  mini
    .command('up')
    .description('start nodes (each with its own swtpm, state disk and bootstrapper), init and join them')
    .option('--control-planes <n>', 'number of control-plane nodes', (v) => parseInteger(v, 1, 9), 1)
    .option('--workers <n>', 'number of worker nodes', (v) => parseInteger(v, 0, 64), 2)
    .action(notBuilt('constellation mini up'));
  mini
    .command('down')
    .description('stop the local cluster and remove its processes, namespaces and files')
    .option('--keep', 'keep the files (state disks, logs) for inspection', false)
    .action(notBuilt('constellation mini down'));

  return program;
}
