import { Command } from '@commander-js/extra-typings';
import type { CommandUnknownOpts } from '@commander-js/extra-typings';
import type { CommandContext } from './command-context.js';

/** `constellation config fetch-measurements`: a node image's signed measurements into the config. */
export function fetchMeasurementsCommand(context: CommandContext): CommandUnknownOpts {
  return new Command('fetch-measurements')
    .description(
      "write a node image's signed reference measurements into constellation-conf.yaml, once their signature verifies against the pinned key",
    )
    .requiredOption('--url <url|path>', 'measurements.json of the node image (an http(s) URL or a file)')
    .option('--signature-url <url|path>', 'its signature (default: the --url with .sig appended)')
    .requiredOption(
      '--public-key <file>',
      "the image publisher's public key (PEM, ECDSA P-256) you pinned; `npm run node-image` prints where its key is",
    )
    .addHelpText(
      'after',
      '\nThe signature is checked before any value is used (ECDSA P-256 with SHA-256 over the file, as cosign' +
        '\nsign-blob writes it); then attestation.measurements (and eventPolicy, when the file has one) are' +
        '\nreplaced and the rest of the config is kept. A refused file leaves the config unchanged.' +
        '\n\nExamples:\n  constellation config fetch-measurements --url https://images.example/v1/measurements.json --public-key release.pub' +
        '\n  constellation config fetch-measurements --url ./image/measurements.json --public-key ./image/measurements.pub\n',
    )
    .action(async (options) => {
      const { fetchMeasurements } = await import('../fetch-measurements.js');
      const result = await fetchMeasurements({
        workspace: context.workspace(),
        url: options.url,
        ...(options.signatureUrl === undefined ? {} : { signatureUrl: options.signatureUrl }),
        publicKey: options.publicKey,
      });
      context.print(
        `measurements for PCRs ${result.pcrs.join(', ')}${result.eventPolicy ? ' and the event policy' : ''} written to the config (signed by ${result.keyFingerprint})`,
      );
    });
}
