import { open } from 'node:fs/promises';
import { UsageError } from '@constellation/command-line';
import {
  EVENT_LOG_LIMITS,
  describeEventData,
  eventPolicyFromLog,
  parseEventLog,
  pcrBanksToJson,
  replayEventLog,
} from '@constellation/eventlog';
import type { EventDetails, EventLog, EventPolicy, LogEvent } from '@constellation/eventlog';
import { errorMessage } from '@constellation/errors';

/** PCR 15 carries the cluster-ID mark: a node that inits or joins has it at zero. */
const CLUSTER_PCR = 15;

/**
 * Reads an event log file, at most the parser's size limit. Reads instead of trusting the size
 * a stat reports: securityfs reports 0 for binary_bios_measurements.
 */
export async function readEventLogFile(path: string): Promise<Buffer> {
  let handle;
  try {
    handle = await open(path, 'r');
  } catch (err) {
    throw new UsageError(`cannot read the event log ${path}: ${errorMessage(err)}`);
  }
  try {
    const limit = EVENT_LOG_LIMITS.maxBytes;
    const buffer = Buffer.alloc(limit + 1);
    let length = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, null);
      if (bytesRead === 0) break;
      length += bytesRead;
      if (length > limit) throw new UsageError(`${path} is larger than ${limit} bytes, the event log size limit`);
    }
    return buffer.subarray(0, length);
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError(`cannot read the event log ${path}: ${errorMessage(err)}`);
  } finally {
    await handle.close();
  }
}

/** Parses a log file; a malformed log fails naming the file and the parser's precise reason. */
export async function loadEventLog(path: string): Promise<EventLog> {
  const bytes = await readEventLogFile(path);
  try {
    return parseEventLog(bytes);
  } catch (err) {
    // The program prints "<path>: <the parser's reason>" from message and cause.
    throw new Error(path, { cause: err });
  }
}

/** One event as `-o json` prints it. */
export interface EventJson {
  index: number;
  offset: number;
  pcr: number;
  type: number;
  typeName: string;
  digests: Record<string, string>;
  data: { untrusted: true; hashesToDigests: boolean; size: number; hex: string; details: EventDetails };
}

/** `{"pcrs": {"sha1": {"0": "<hex>"}}, "events": [...]}` and the format facts around them. */
export interface EventLogJson {
  format: EventLog['format'];
  banks: string[];
  startupLocality: number | null;
  pcrs: Record<string, Record<string, string>>;
  events: EventJson[];
}

export function eventLogJson(log: EventLog): EventLogJson {
  return {
    format: log.format,
    banks: [...log.banks],
    startupLocality: log.startupLocality ?? null,
    pcrs: pcrBanksToJson(replayEventLog(log)),
    events: log.events.map((event) => {
      const view = describeEventData(event);
      return {
        index: event.index,
        offset: event.offset,
        pcr: event.pcr,
        type: event.type,
        typeName: event.typeName,
        digests: digestsJson(event),
        data: {
          untrusted: true,
          hashesToDigests: view.hashesToDigests,
          size: event.data.length,
          hex: event.data.toString('hex'),
          details: view.details,
        },
      };
    }),
  };
}

function digestsJson(event: LogEvent): Record<string, string> {
  return Object.fromEntries([...event.digests].map(([bank, digest]) => [bank, digest.toString('hex')]));
}

/** A value from event data, quoted so that newlines and quotes in it cannot pose as other output. */
const quoted = (text: string): string => JSON.stringify(text);

/** What an operator reads from an event's data, on one line; undefined when nothing was decoded. */
function detailsText(details: EventDetails): string | undefined {
  switch (details.kind) {
    case 'spec-id':
      return `signature ${quoted(details.signature)}`;
    case 'startup-locality':
      return `startup locality ${details.locality}`;
    case 'no-action':
      return details.signature === undefined ? undefined : `signature ${quoted(details.signature)}`;
    case 'separator':
      return details.value === 'normal' ? 'separator 00000000' : 'error separator ffffffff';
    case 'uefi-variable': {
      const parts = [
        `variable ${quoted(details.name)} (${details.variableGuid}${details.secureBootVariable === undefined ? '' : `, Secure Boot's ${details.secureBootVariable}`}), ${details.dataSize} bytes`,
      ];
      if (details.secureBoot !== undefined) parts.push(`Secure Boot ${details.secureBoot}`);
      if (details.bootOption !== undefined) {
        parts.push(
          `boot option ${quoted(details.bootOption.description)}${details.bootOption.devicePath === undefined ? '' : ` at ${quoted(details.bootOption.devicePath)}`}`,
        );
      }
      return parts.join('; ');
    }
    case 'uefi-image':
      return `image of ${details.imageLength ?? '?'} bytes at ${details.imageLocation}${details.devicePath === undefined ? '' : `, device path ${quoted(details.devicePath)}`}${details.devicePathError === undefined ? '' : ` (device path unreadable: ${details.devicePathError})`}`;
    case 'grub-command':
      return `GRUB command ${quoted(details.command)}`;
    case 'kernel-command-line':
      return `kernel command line (${details.bootLoader}) ${quoted(details.commandLine)}`;
    case 'text':
      return `text ${quoted(details.text)}`;
    case 'firmware-blob':
      return `firmware blob at ${details.base}, ${details.length} bytes${details.description === undefined ? '' : ` ${quoted(details.description)}`}`;
    case 'gpt':
      return `GPT disk ${details.diskGuid}, partitions ${details.partitions.map((p) => quoted(p.name)).join(', ')}`;
    case 'undecodable':
      return `undecodable: ${details.reason}`;
    case 'bytes':
      return undefined;
  }
}

/**
 * One event for reading: index, PCR, type, its digests, and what its data says (untrusted, with
 * whether the digests confirm it). `indent` goes before every line (verify nests them under a PCR).
 */
export function eventLines(event: LogEvent, indent = ''): string[] {
  const view = describeEventData(event);
  const lines = [`${indent}#${event.index}  PCR ${event.pcr}  ${event.typeName}  (${event.data.length} bytes of data)`];
  if (event.typeName === 'EV_NO_ACTION') {
    lines.push(`${indent}    not extended (EV_NO_ACTION)`);
  } else {
    for (const [bank, digest] of event.digests) lines.push(`${indent}    ${bank.padEnd(6)} ${digest.toString('hex')}`);
  }
  const text = detailsText(view.details);
  if (text !== undefined) {
    lines.push(
      `${indent}    untrusted, ${view.hashesToDigests ? 'hashes to its digests' : 'not confirmed by the digests'}: ${text}`,
    );
  }
  return lines;
}

/** The events and the replayed PCRs, for reading. */
export function eventLogText(path: string, log: EventLog): string {
  const lines: string[] = [];
  const header =
    log.specId === undefined
      ? 'SHA-1 format'
      : `crypto-agile (TCG spec ${log.specId.specVersionMajor}.${log.specId.specVersionMinor} errata ${log.specId.specErrata})`;
  lines.push(
    `${path}: ${header} event log, ${log.events.length} events, banks ${log.banks.join(', ')}${log.startupLocality === undefined ? '' : `, startup locality ${log.startupLocality}`}`,
    'Event data is untrusted: the TPM binds only the digests. Lines marked "untrusted" come from the data;',
    '"hashes to its digests" means the digests confirm it, "not confirmed by the digests" that only the log says so.',
    '',
  );
  for (const event of log.events) lines.push(...eventLines(event));
  lines.push('', 'Replayed PCRs');
  for (const [bank, values] of replayEventLog(log)) {
    lines.push(`  ${bank}`);
    for (const [pcr, value] of values) lines.push(`    ${String(pcr).padStart(2)}  ${value.toString('hex')}`);
  }
  return `${lines.join('\n')}\n`;
}

/** Reference values from a known-good log: PCR values (SHA-256) and the event policy it satisfies. */
export interface ReferenceValues {
  measurements: Record<string, { expected: string; warnOnly: boolean }>;
  eventPolicy: EventPolicy;
}

/**
 * The SHA-256 values of `pcrs` (default: every PCR the log extends) plus PCR 15 at zero, in
 * attestation.measurements' form, and the policy on events the log satisfies.
 */
export function referenceValues(log: EventLog, pcrs: readonly number[] | undefined): ReferenceValues {
  const sha256 = replayEventLog(log).get('sha256');
  if (sha256 === undefined) {
    throw new UsageError(
      `the log has no SHA-256 bank (it has ${log.banks.join(', ')}): measurements are SHA-256 PCR values; take the log from a machine whose firmware logs SHA-256`,
    );
  }
  const chosen = pcrs ?? [...sha256.keys()].filter((pcr) => pcr !== CLUSTER_PCR);
  const measurements: ReferenceValues['measurements'] = {};
  for (const pcr of [...chosen].sort((a, b) => a - b)) {
    if (pcr === CLUSTER_PCR)
      throw new UsageError('--pcrs: PCR 15 is the cluster-ID PCR: it is always expected to be zero');
    const value = sha256.get(pcr);
    if (value === undefined) {
      throw new UsageError(`--pcrs: the log has no event for PCR ${pcr} (it extends ${[...sha256.keys()].join(', ')})`);
    }
    measurements[String(pcr)] = { expected: value.toString('hex'), warnOnly: false };
  }
  measurements[String(CLUSTER_PCR)] = { expected: '0'.repeat(64), warnOnly: false };
  return { measurements, eventPolicy: eventPolicyFromLog(log) };
}
