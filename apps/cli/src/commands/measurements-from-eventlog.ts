import { Command, Option } from '@commander-js/extra-typings';
import type { CommandUnknownOpts } from '@commander-js/extra-typings';
import { UsageError } from '@constellation/command-line';
import { writeResult } from './command-context.js';
import type { CommandContext } from './command-context.js';

function parsePcrList(value: string): number[] {
  const pcrs = value.split(',').map((part) => {
    const trimmed = part.trim();
    if (!/^\d{1,2}$/.test(trimmed) || Number(trimmed) > 23) {
      throw new UsageError(
        `--pcrs: expected PCR indexes from 0 to 23 separated by commas, got ${JSON.stringify(part)}`,
      );
    }
    return Number(trimmed);
  });
  return [...new Set(pcrs)];
}

/**
 * `constellation config measurements from-eventlog <file>` (reference values from a known-good boot)
 * and `from-image <image>` (computed from the node image itself).
 */
export function measurementsCommand(_context: CommandContext): CommandUnknownOpts {
  const measurements = new Command('measurements').description('work with the measurements nodes must prove');
  measurements
    .command('from-eventlog')
    .description(
      'reference values from the event log of a known-good machine: its SHA-256 PCR values and the policy on boot events it satisfies',
    )
    .argument('<file>', "the known-good machine's event log (binary_bios_measurements)")
    .option('--pcrs <list>', 'only these PCRs, comma-separated (default: every PCR the log extends)', parsePcrList)
    .addOption(
      new Option('-o, --output <format>', 'yaml to paste into the config, json for scripts')
        .choices(['yaml', 'json'] as const)
        .default('yaml' as const),
    )
    .addHelpText(
      'after',
      '\nPrints `measurements` (PCR -> expected SHA-256 value, PCR 15 at zero) for attestation.measurements,' +
        '\nand `eventPolicy`: Secure Boot enabled if it was, the kernel command lines and the boot application' +
        '\ndigests the log shows. Only event data that hashes to its digests is used. Take the log on a machine' +
        '\nyou trust, booted from the node image you will run: every value comes from that one boot.' +
        '\n\nExamples:\n  constellation config measurements from-eventlog known-good.log --pcrs 4,7,8,9\n  constellation config measurements from-eventlog known-good.log -o json\n',
    )
    .action(async (file, options) => {
      const { loadEventLog, referenceValues } = await import('../eventlog-report.js');
      const { stringify } = await import('yaml');
      const values = referenceValues(await loadEventLog(file), options.pcrs);
      if (options.output === 'json') {
        writeResult(`${JSON.stringify(values)}\n`);
        return;
      }
      writeResult(
        `# Reference values from ${JSON.stringify(file)}. measurements: for attestation.measurements;\n` +
          '# eventPolicy: the rules on boot events this boot satisfies (checked by the verifier once it replays logs).\n' +
          stringify(values),
      );
    });
  measurements
    .command('from-image')
    .description(
      "reference values computed from a node image's UKI, without booting it: PCRs 4, 9 and 11, PCR 15 at zero, and the event digests each may have",
    )
    .argument('<image>', 'the image directory `npm run node-image` printed (its uki.efi), or a UKI file')
    .addOption(
      new Option('-o, --output <format>', 'yaml to paste into the config, json to sign or for scripts, events to read')
        .choices(['yaml', 'json', 'events'] as const)
        .default('yaml' as const),
    )
    .addHelpText(
      'after',
      "\nPCR 4: the firmware's boot-option action and separator, then the Authenticode SHA-256 of the UKI and of" +
        '\nthe kernel in it (systemd-stub starts it through the firmware). PCR 9: the kernel command line (UTF-16)' +
        "\nand the initrd, as the kernel's EFI stub measures them. PCR 11: systemd-stub's sections .linux, .osrel," +
        "\n.cmdline, .initrd (name, then content). The firmware's own PCRs (0-3, 5-7) depend on the machine: take" +
        '\nthem with from-eventlog from a machine you trust. docs/node-image.md says what each PCR holds.' +
        '\n\nExamples:\n  constellation config measurements from-image "$(npm run -s node-image)"\n  constellation config measurements from-image uki.efi -o events\n',
    )
    .action(async (image, options) => {
      const { measurementsFromImage, predictedEventsTable } = await import('../measurements-from-image.js');
      const reference = await measurementsFromImage(image);
      if (options.output === 'events') {
        writeResult(predictedEventsTable(reference));
        return;
      }
      if (options.output === 'json') {
        writeResult(`${JSON.stringify(reference.file, null, 2)}\n`);
        return;
      }
      const { stringify } = await import('yaml');
      writeResult(
        `# Reference values computed from ${reference.uki} (sha256:${reference.ukiSha256}).\n` +
          '# measurements: for attestation.measurements; eventPolicy: the digests the events of PCRs 4, 9 and 11 may have.\n' +
          stringify(reference.file),
      );
    });
  return measurements;
}
