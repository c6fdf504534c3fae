import { resolve } from 'node:path';
import { Command, Option } from '@commander-js/extra-typings';
import { readPemCertificates } from '@constellation/attestation';
import { UsageError, parseInteger } from '@constellation/command-line';
import { configYaml } from './cluster-config.js';
import { runInit } from './init-command.js';
import { recoverNode } from './recover-command.js';
import { clusterStatus } from './status-command.js';
import { verifyNode } from './verify-command.js';
import { serveMetadata } from './mini/metadata-daemon.js';
import { miniDown } from './mini/mini-down.js';
import { miniReboot } from './mini/mini-reboot.js';
import { miniUp } from './mini/mini-up.js';
import { selfCommand } from './self-command.js';
import { VERSION } from './version.js';
import { workspaceFiles, writeWorkspaceFile } from './workspace.js';
import { errorMessage } from '@constellation/errors';

const outputOption = (): Option<'--output <format>', undefined, 'text', 'text' | 'json'> =>
  new Option('--output <format>', 'how to print the result')
    .choices(['text', 'json'] as const)
    .default('text' as const);

/** Progress and notes go to stderr; results go to stdout. */
const print = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

/** `constellation`: the operator's command line. */
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
  // Absolute: daemons started by mini (swtpm) change their working directory.
  const workspace = (): string => resolve(program.opts().workspace);

  const config = program.command('config').description('work with the cluster configuration file');
  config
    .command('generate')
    .description('write a commented constellation-conf.yaml with defaults to edit')
    .addHelpText(
      'after',
      '\nExamples:\n  constellation config generate --ek-roots tpm-vendor-ek-root.pem\n  constellation --workspace ./prod config generate --force\n',
    )
    .option('--force', 'overwrite an existing file', false)
    .option(
      '--ek-roots <file>',
      "PEM file of the EK CA roots to pin (your TPM vendor's or platform's); without it, fill in attestation.ekCertificateAuthorities.roots before init",
    )
    .option('--ek-intermediates <file>', 'PEM file of EK CA intermediates that TPMs do not send themselves')
    .action(async (options) => {
      const pem = async (file: string | undefined, option: string): Promise<string> => {
        if (file === undefined) return '';
        try {
          return (await readPemCertificates(file)).text;
        } catch (err) {
          throw new UsageError(`${option}: ${errorMessage(err)}`);
        }
      };
      const ekRoots = await pem(options.ekRoots, '--ek-roots');
      const ekIntermediates = await pem(options.ekIntermediates, '--ek-intermediates');
      const path = workspaceFiles(workspace()).config;
      const { access } = await import('node:fs/promises');
      const exists = await access(path).then(
        () => true,
        () => false,
      );
      if (exists && !options.force) throw new UsageError(`${path} exists; use --force to overwrite it`);
      const yaml = configYaml({
        name: 'constellation',
        kubernetesVersion: 'v1.32.9',
        initEndpoint: '10.42.0.2:9000',
        apiServerCertSans: [],
        serviceCidr: '10.96.0.0/12',
        attestation: {
          variant: 'tpm2-ek',
          measurements: new Map([[15, { expected: Buffer.alloc(32), warnOnly: false }]]),
          ekRoots,
          ekIntermediates,
        },
      });
      await writeWorkspaceFile(path, yaml, false);
      print(
        `wrote ${path}; add your node image's measurements under attestation.measurements${ekRoots === '' ? " and your TPMs' EK CA roots under attestation.ekCertificateAuthorities.roots" : ''}`,
      );
    });

  program
    .command('init')
    .alias('apply')
    .addHelpText('after', '\nExamples:\n  constellation init\n  constellation --workspace ./prod init --output json\n')
    .description(
      'create the cluster: dial the first control-plane node over attested TLS, verify it against the ' +
        'configured measurements (nothing is sent before that), send the master secret, show progress, ' +
        'write kubeconfig, state and master secret (0600)',
    )
    .addOption(outputOption())
    .action(async (options) => {
      const result = await runInit({ workspace: workspace(), print });
      if (options.output === 'json') process.stdout.write(`${JSON.stringify(result)}\n`);
      else
        process.stdout.write(
          `cluster ${result.clusterId} created\nkubeconfig: ${result.kubeconfig}\nstate: ${result.state}\nmaster secret: ${result.masterSecret}\n`,
        );
    });

  program
    .command('verify')
    .description('attest a node on demand and print its PCRs next to the expected values')
    .requiredOption('--node <host[:port]>', 'node to attest (port 30081 by default)')
    .addHelpText(
      'after',
      '\nExamples:\n  constellation verify --node 10.42.0.11\n  constellation verify --node 127.0.0.11:40123 --output json\n',
    )
    .addOption(outputOption())
    .action(async (options) => {
      const report = await verifyNode(workspace(), options.node, print);
      if (options.output === 'json') process.stdout.write(`${JSON.stringify(report)}\n`);
      else {
        process.stdout.write(
          `node ${report.node}, attestation key ${report.attestationKey}${report.endorsementKey === undefined ? ' (unrooted: no TPM identity proven)' : `, TPM endorsement key sha256:${report.endorsementKey} (proven by credential activation)`}\n`,
        );
        for (const p of report.pcrs) {
          process.stdout.write(
            `PCR ${String(p.pcr).padStart(2)}  ${p.matches ? 'ok      ' : 'MISMATCH'}  expected ${p.expected}\n                actual   ${p.actual}\n`,
          );
        }
      }
      const bad = report.pcrs.filter((p) => !p.matches).map((p) => p.pcr);
      if (bad.length > 0)
        throw new Error(`${report.node} does not match the expected measurements: PCR ${bad.join(', ')}`);
    });

  program
    .command('status')
    .description(
      'show nodes, roles, join state and versions of the cluster; for mini also machines that were refused, and why',
    )
    .addHelpText('after', '\nExamples:\n  constellation status\n  constellation status --output json\n')
    .addOption(outputOption())
    .action(async (options) => {
      const status = await clusterStatus(workspace());
      if (options.output === 'json') {
        process.stdout.write(`${JSON.stringify(status)}\n`);
        return;
      }
      process.stdout.write(`cluster ${status.clusterId}\n`);
      for (const node of status.nodes) {
        const detail = node.joined
          ? `joined, Kubernetes ${node.kubernetesVersion}`
          : `NOT JOINED: ${node.problem ?? ''}`;
        process.stdout.write(`${node.name.padEnd(18)}${node.role.padEnd(15)}${detail}\n`);
      }
    });

  program
    .command('recover')
    .description('after a full control-plane shutdown, hand a waiting control-plane node its disk key')
    .requiredOption('--endpoint <host[:port]>', 'control-plane node waiting for recovery (port 9999 by default)')
    .addHelpText('after', '\nExamples:\n  constellation recover --endpoint 10.42.0.10\n')
    .addOption(outputOption())
    .action(async (options) => {
      const answer = await recoverNode(workspace(), options.endpoint, print);
      if (options.output === 'json') process.stdout.write(`${JSON.stringify(answer)}\n`);
      else
        process.stdout.write(
          `${answer.endpoint} recovered: state disk ${answer.diskUuid} open, cluster ${answer.clusterIdHex}\n`,
        );
    });

  const mini = program.command('mini').description('run a whole attested cluster on this machine');
  mini
    .command('up')
    .description('start nodes (each with its own swtpm, state disk and bootstrapper), init and join them')
    .addHelpText(
      'after',
      '\nExamples:\n  constellation mini up\n  constellation mini up --workers 8\n  constellation mini up --tampered-workers 1   # see a modified node refused\n',
    )
    .option('--control-planes <n>', 'number of control-plane nodes', (v) => parseInteger(v, 1, 9), 1)
    .option('--workers <n>', 'number of worker nodes', (v) => parseInteger(v, 0, 64), 2)
    .addOption(
      new Option(
        '--network <mode>',
        'node networking: namespaces (needs root), loopback, or auto (namespaces when root)',
      )
        .choices(['auto', 'namespaces', 'loopback'] as const)
        .default('auto' as const),
    )
    .addOption(
      new Option('--tampered-workers <n>', 'workers whose bootstrapper bundle is modified (they must be refused)')
        .argParser((v) => parseInteger(v, 0, 64))
        .default(0),
    )
    .addOption(outputOption())
    .action(async (options) => {
      const result = await miniUp({
        workspace: workspace(),
        controlPlanes: options.controlPlanes,
        workers: options.workers,
        tamperedWorkers: options.tamperedWorkers,
        network: options.network,
        print,
      });
      if (options.output === 'json') {
        process.stdout.write(`${JSON.stringify(result)}\n`);
        return;
      }
      const rows = [
        ['NODE', 'ROLE', 'ADDRESS', 'STATE', 'ATTESTATION'],
        ...result.nodes.map((n) => [n.name, n.role, n.ip, n.state, n.attestation]),
      ];
      const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
      for (const row of rows)
        process.stdout.write(
          `${row
            .map((cell, i) => cell.padEnd(widths[i] ?? 0))
            .join('  ')
            .trimEnd()}\n`,
        );
      process.stdout.write(
        `\nkubeconfig: ${result.kubeconfig}\nstate: ${result.state}\nup in ${(result.elapsedMs / 1000).toFixed(1)} s; stop with: ${selfCommand(workspace(), ['mini', 'down'])}\n`,
      );
    });
  mini
    .command('down')
    .description('stop the local cluster and remove its processes and files')
    .addHelpText(
      'after',
      '\nExamples:\n  constellation mini down\n  constellation mini down --keep   # keep logs and disks for inspection\n',
    )
    .option('--keep', 'keep the files (state disks, logs) for inspection', false)
    .action((options) => miniDown(workspace(), options.keep, print));
  mini
    .command('reboot')
    .description('reboot a node: TPM power cycle, measured boot, bootstrapper again (it rejoins)')
    .addHelpText(
      'after',
      '\nExamples:\n  constellation mini reboot worker-1\n  constellation mini reboot control-plane-0 --stop-joinservice   # then: constellation recover\n',
    )
    .argument('<node>', 'node name, for example worker-1')
    .option('--stop-joinservice', 'also stop the JoinService, as in a full control-plane shutdown', false)
    .action((node, options) => miniReboot(workspace(), node, options.stopJoinservice, print));
  mini
    .command('serve-metadata', { hidden: true })
    .requiredOption('--document <file>')
    .requiredOption('--url-file <file>')
    .option('--host <address>', 'address to listen on', '127.0.0.1')
    .option('--artifacts <dir>', 'also serve this directory under /artifacts/')
    .action((options) => serveMetadata(options.document, options.urlFile, options.host, options.artifacts));

  return program;
}
