import { Command, Option } from '@commander-js/extra-typings';
import { NotBuiltYetError, parsePort } from '@constellation/command-line';
import { createWinstonLogger } from '@constellation/logger';
import { VERSION } from './version.js';

/** The JoinService's command line, matching what the DaemonSet in deploy/ passes. */
export function createProgram(): Command<[], { port: number; logLevel: 'debug' | 'info' | 'warn' | 'error' }> {
  return new Command('constellation-joinservice')
    .description(
      "In-cluster service (DaemonSet on control-plane nodes) that checks a joining node's TPM\n" +
        "attestation against the cluster's measurements and, if it matches, issues a join ticket:\n" +
        "a fresh 15-minute bootstrap token, the CA pin, a kubelet certificate and the node's disk key.\n" +
        'Logs are JSON lines on stdout.',
    )
    .version(VERSION, '--version', 'print the version and exit')
    .helpOption('-h, --help', 'show this help')
    .option('--port <port>', 'gRPC port to serve joins on', (value) => parsePort(value), 9090)
    .addOption(
      new Option('--log-level <level>', 'least severe level that is logged')
        .choices(['debug', 'info', 'warn', 'error'] as const)
        .default('info' as const),
    )
    .action((options) => {
      const log = createWinstonLogger({ service: 'joinservice', level: options.logLevel });
      log.info('joinservice starting', { version: VERSION, port: options.port });
      throw new NotBuiltYetError('the JoinService', 'issue 6');
    });
}
