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

/** `constellation config measurements from-eventlog <file>`: reference values from a known-good boot. */
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
  return measurements;
}
