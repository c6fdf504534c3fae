import { Command } from '@commander-js/extra-typings';
import type { CommandUnknownOpts } from '@commander-js/extra-typings';
import { readPemCertificates } from '@constellation/attestation';
import { pathExists } from '@constellation/files';
import { UsageError, readOptionFile } from '@constellation/command-line';
import { configYaml } from '../constellation-conf.js';
import { CLI_DEFAULTS } from '../config.js';
import { workspaceFiles, writeWorkspaceFile } from '../workspace.js';
import type { CommandContext } from './command-context.js';

async function readPemOption(file: string | undefined, option: string): Promise<string> {
  if (file === undefined) return '';
  return (await readOptionFile(option, () => readPemCertificates(file))).text;
}

/** `constellation config generate`: a commented configuration with defaults to edit. */
export function configCommand(context: CommandContext): CommandUnknownOpts {
  const config = new Command('config').description('work with the cluster configuration file');
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
      const ekRoots = await readPemOption(options.ekRoots, '--ek-roots');
      const ekIntermediates = await readPemOption(options.ekIntermediates, '--ek-intermediates');
      const path = workspaceFiles(context.workspace()).config;
      if ((await pathExists(path)) && !options.force)
        throw new UsageError(`${path} exists; use --force to overwrite it`);
      const yaml = configYaml({
        name: 'constellation',
        kubernetesVersion: CLI_DEFAULTS.kubernetesVersion,
        initEndpoint: CLI_DEFAULTS.initEndpoint,
        apiServerCertSans: [],
        serviceCidr: CLI_DEFAULTS.serviceCidr,
        attestation: {
          variant: 'tpm2-ek',
          measurements: new Map([[15, { expected: Buffer.alloc(32), warnOnly: false }]]),
          ekRoots,
          ekIntermediates,
        },
      });
      await writeWorkspaceFile(path, yaml, false);
      context.print(
        `wrote ${path}; add your node image's measurements under attestation.measurements${ekRoots === '' ? ", your TPMs' EK CA roots under attestation.ekCertificateAuthorities.roots" : ''} and the first control-plane machine's EK hash under attestation.firstControlPlaneEk`,
      );
    });
  return config;
}
