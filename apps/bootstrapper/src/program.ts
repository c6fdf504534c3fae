import { Command, Option } from '@commander-js/extra-typings';
import { NotBuiltYetError } from '@constellation/command-line';
import { createWinstonLogger } from '@constellation/logger';
import { VERSION } from './version.js';

/** The bootstrapper's command line. Configuration is parsed here once and passed down typed. */
export function createProgram(): Command<[], { logLevel: 'debug' | 'info' | 'warn' | 'error' }> {
  return new Command('constellation-bootstrapper')
    .description(
      'Node daemon baked into the node image. On a fresh node it serves the InitServer (port 9000,\n' +
        'attested TLS) and polls the JoinService at the same time; whichever passes its point of no\n' +
        'return first takes the one-way node lock, then the node runs kubeadm init or join.\n' +
        'Logs are JSON lines on stdout.',
    )
    .version(VERSION, '--version', 'print the version and exit')
    .helpOption('-h, --help', 'show this help')
    .addOption(
      new Option('--log-level <level>', 'least severe level that is logged')
        .choices(['debug', 'info', 'warn', 'error'] as const)
        .default('info' as const),
    )
    .action((options) => {
      const log = createWinstonLogger({ service: 'bootstrapper', level: options.logLevel });
      log.info('bootstrapper starting', { version: VERSION });
      throw new NotBuiltYetError('the node bootstrap flow (InitServer, JoinClient, node lock)', 'issue 5');
    });
}
