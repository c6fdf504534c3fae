// The kubeadm stand-in: kubeadm's command-line contract (init --config, join --config, reset)
// for machines without kubelet or containers, until mini's nodes run the real kubelet. Its init
// runs real kubeadm's phases under $KUBEADM_STANDIN_ROOT and the real control plane as processes
// in place of the static pods (the programs from $KUBEADM_STANDIN_BIN_DIR, in the network
// namespace $KUBEADM_STANDIN_NETNS when set); its join keeps its own discovery and TLS bootstrap
// against that real API server.
import { Command } from '@commander-js/extra-typings';
import { PhaseError, init, join, reset } from './commands.js';
import { ConfigError } from './config-schema.js';
import { errorMessage } from '@constellation/errors';

const root = process.env['KUBEADM_STANDIN_ROOT'];
const print = (line: string): void => {
  process.stdout.write(`${line}\n`);
};

function needRoot(): string {
  if (root === undefined || root === '') {
    process.stderr.write(
      "error: the kubeadm stand-in writes under $KUBEADM_STANDIN_ROOT; set it to the node's root directory\n",
    );
    process.exit(1);
  }
  return root;
}

const program = new Command('kubeadm').description('kubeadm stand-in (constellation sandbox)').exitOverride();
program
  .command('init')
  .requiredOption('--config <file>', 'kubeadm configuration')
  .option('--skip-token-print', 'do not print the bootstrap token in the join command')
  .option('-v, --v <level>', 'verbosity (ignored)')
  .action((o) => init(needRoot(), o.config, print, { skipTokenPrint: o.skipTokenPrint === true }));
program
  .command('join')
  .requiredOption('--config <file>', 'kubeadm configuration')
  .option('-v, --v <level>', 'verbosity (ignored)')
  .action((o) => join(needRoot(), o.config, print));
program
  .command('reset')
  .option('-f, --force', 'no confirmation (always)')
  .action(() => reset(needRoot(), print));

try {
  await program.parseAsync(process.argv);
} catch (err) {
  const code = (err as { code?: string }).code;
  if (code === 'commander.helpDisplayed' || code === 'commander.version') process.exit(0);
  if (typeof code === 'string' && code.startsWith('commander.')) process.exit(2);
  // kubeadm prints configuration and phase errors as they are (kubeadmutil.CheckErr).
  const plain = err instanceof PhaseError || err instanceof ConfigError;
  process.stderr.write(
    `${plain ? err.message : `error: ${errorMessage(err)}`}\nTo see the stack trace of this error execute with --v=5 or higher\n`,
  );
  process.exit(1);
}
