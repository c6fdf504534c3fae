import { Command } from '@commander-js/extra-typings';
import type { CommandUnknownOpts } from '@commander-js/extra-typings';
import { terminalSafe } from '@constellation/command-line';
import type { eventLines as EventLines } from '../eventlog-report.js';
import type { VerifyReport } from '../verify-command.js';
import { outputOption, writeJson, writeResult } from './command-context.js';
import type { CommandContext } from './command-context.js';

function reportText(report: VerifyReport, eventLines: typeof EventLines): string {
  const identity =
    report.endorsementKey === undefined
      ? ' (unrooted: no TPM identity proven)'
      : `, TPM endorsement key sha256:${report.endorsementKey} (proven by credential activation)`;
  const lines = [`node ${report.node}, attestation key ${report.attestationKey}${identity}\n`];
  for (const p of report.pcrs) {
    lines.push(
      `PCR ${String(p.pcr).padStart(2)}  ${p.matches ? 'ok      ' : 'MISMATCH'}  expected ${p.expected}\n                actual   ${p.actual}\n`,
    );
    if (p.events !== undefined) {
      // What the node's event log (replayed against the quote) says extended this PCR.
      lines.push(
        p.events.length === 0
          ? '                the event log shows no event for this PCR\n'
          : `                extended by ${p.events.length} ${p.events.length === 1 ? 'event' : 'events'} (data untrusted unless the digests confirm it):\n${p.events.flatMap((e) => eventLines(e.event, '                  ')).join('\n')}\n`,
      );
    }
  }
  lines.push(
    report.eventLogEvents === undefined
      ? 'event log: none sent (PCR values only)\n'
      : `event log: ${report.eventLogEvents} events, replayed to the quote\n`,
  );
  for (const violation of report.eventPolicyViolations) lines.push(`EVENT POLICY  ${violation}\n`);
  return lines.join('');
}

/** The report as `-o json` prints it: events without their raw data. */
function reportJson(report: VerifyReport): unknown {
  return {
    ...report,
    pcrs: report.pcrs.map((p) => ({
      ...p,
      ...(p.events === undefined ? {} : { events: p.events.map(({ event: _event, ...rest }) => rest) }),
    })),
  };
}

/** `constellation verify`: attest one node on demand. Exits 1 when a measurement does not match. */
export function verifyCommand(context: CommandContext): CommandUnknownOpts {
  return new Command('verify')
    .description('attest a node on demand and print its PCRs next to the expected values')
    .requiredOption('--node <host[:port]>', 'node to attest (port 30081 by default)')
    .addHelpText(
      'after',
      '\nExamples:\n  constellation verify --node 10.42.0.11\n  constellation verify --node 127.0.0.11:40123 --output json\n',
    )
    .addOption(outputOption())
    .action(async (options) => {
      const { verifyNode } = await import('../verify-command.js');
      const { eventLines } = await import('../eventlog-report.js');
      const report = await verifyNode(context.workspace(), options.node, context.print);
      if (options.output === 'json') writeJson(reportJson(report));
      else writeResult(terminalSafe(reportText(report, eventLines)));
      const bad = report.pcrs.filter((p) => !p.matches).map((p) => p.pcr);
      if (bad.length > 0)
        throw new Error(`${report.node} does not match the expected measurements: PCR ${bad.join(', ')}`);
      if (report.eventPolicyViolations.length > 0)
        throw new Error(`${report.node} does not satisfy the event policy: ${report.eventPolicyViolations.join('; ')}`);
    });
}
