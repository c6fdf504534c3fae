import { Command } from '@commander-js/extra-typings';
import type { CommandUnknownOpts } from '@commander-js/extra-typings';
import type { VerifyReport } from '../verify-command.js';
import { outputOption, writeJson, writeResult } from './command-context.js';
import type { CommandContext } from './command-context.js';

function reportText(report: VerifyReport): string {
  const identity =
    report.endorsementKey === undefined
      ? ' (unrooted: no TPM identity proven)'
      : `, TPM endorsement key sha256:${report.endorsementKey} (proven by credential activation)`;
  const lines = [`node ${report.node}, attestation key ${report.attestationKey}${identity}\n`];
  for (const p of report.pcrs) {
    lines.push(
      `PCR ${String(p.pcr).padStart(2)}  ${p.matches ? 'ok      ' : 'MISMATCH'}  expected ${p.expected}\n                actual   ${p.actual}\n`,
    );
  }
  return lines.join('');
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
      const report = await verifyNode(context.workspace(), options.node, context.print);
      if (options.output === 'json') writeJson(report);
      else writeResult(reportText(report));
      const bad = report.pcrs.filter((p) => !p.matches).map((p) => p.pcr);
      if (bad.length > 0)
        throw new Error(`${report.node} does not match the expected measurements: PCR ${bad.join(', ')}`);
    });
}
