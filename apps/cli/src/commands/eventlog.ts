import { Command, Option } from '@commander-js/extra-typings';
import type { CommandUnknownOpts } from '@commander-js/extra-typings';
import { terminalSafe } from '@constellation/command-line';
import { writeJson, writeResult } from './command-context.js';
import type { CommandContext } from './command-context.js';

/** `-o, --output text|json`, as the scripts use it. */
export const eventLogOutputOption = (): Option<'-o, --output <format>', undefined, 'text', 'text' | 'json'> =>
  new Option('-o, --output <format>', 'text for reading, json for scripts')
    .choices(['text', 'json'] as const)
    .default('text' as const);

/** `constellation eventlog <file>`: the events of a TCG event log and the PCRs they replay to. */
export function eventlogCommand(_context: CommandContext): CommandUnknownOpts {
  return new Command('eventlog')
    .description(
      'print the events of a TCG event log (binary_bios_measurements) and the PCR values they replay to, per bank',
    )
    .argument('<file>', 'the event log: crypto-agile or SHA-1 format, at most 1 MiB')
    .addOption(eventLogOutputOption())
    .addHelpText(
      'after',
      '\nEach event shows its index, PCR, type and digests. What is decoded from its data (UEFI variables,' +
        '\nSecure Boot, device paths, GRUB commands, the kernel command line) is marked untrusted: the TPM' +
        '\nbinds only the digests, so the data is what the log claims unless it "hashes to its digests".' +
        '\n\n-o json prints {"pcrs": {"sha256": {"0": "<hex>", ...}, ...}, "events": [...]}: bank names lower' +
        '\ncase, PCR indexes as decimal strings, digests as lower-case hex.' +
        '\n\nExamples:\n  sudo cat /sys/kernel/security/tpm0/binary_bios_measurements > boot.log\n  constellation eventlog boot.log\n  constellation eventlog boot.log -o json | jq -r \'.pcrs.sha256["7"]\'\n',
    )
    .action(async (file, options) => {
      const { eventLogJson, eventLogText, loadEventLog } = await import('../eventlog-report.js');
      const log = await loadEventLog(file);
      if (options.output === 'json') writeJson(eventLogJson(log));
      else writeResult(terminalSafe(eventLogText(file, log)));
    });
}
