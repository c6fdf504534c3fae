import {
  EventLogError,
  checkEventPolicy,
  describeEventData,
  eventsForPcr,
  extendsPcr,
  initialPcrValue,
  parseEventLog,
  replayEventLog,
} from '@constellation/eventlog';
import type { EventLog, EventPolicy, LogEvent } from '@constellation/eventlog';
import { AttestationError } from './errors.js';

/**
 * Largest TCG event log a document may carry. Real firmware logs are 15-50 KiB (the shared test
 * logs: 15 KiB on a workstation, 50 KiB on a bare-metal host); the bootstrapper's own events add
 * under 100 bytes each. The log travels in aTLS certificates too, and TLS clients take chains of
 * at most 100 KiB.
 */
export const MAX_EVENT_LOG_BYTES = 64 * 1024;
/** Most events a document's log may have (real logs: tens to a few hundred). */
export const MAX_EVENT_LOG_EVENTS = 2_048;

/** The node's event log after its replay was checked against the quote. */
export interface CheckedEventLog {
  log: EventLog;
  /** Quoted PCRs the log extends: each replays to exactly the quoted value. */
  replayed: ReadonlySet<number>;
  /** PCRs the log extends that the quote does not cover: their events are unverified. */
  unquoted: readonly number[];
}

/**
 * Parses the document's TCG event log with limits, replays its SHA-256 bank (the bank quotes
 * are accepted in) and requires, for every quoted PCR the log extends, the replayed value to
 * equal the quoted one. A PCR the verifier measures (`measured`) that the log shows no event for
 * must be at its reset value: otherwise the log leaves out what was extended there (an event
 * removed), and the PCR's value alone would hide it. PCRs neither in the log nor measured keep
 * the value comparison (IMA's PCR 10, say, is extended without a firmware log event).
 * Undefined when the document carries no log. Throws AttestationError ("event-log") naming the
 * PCR and both values, or what is wrong with the log.
 */
export function checkEventLog(
  bytes: Uint8Array,
  quoted: ReadonlyMap<number, Buffer>,
  measured: Iterable<number> = [],
): CheckedEventLog | undefined {
  if (bytes.length === 0) return undefined;
  if (bytes.length > MAX_EVENT_LOG_BYTES) {
    throw new AttestationError(
      'event-log',
      `event log of ${bytes.length} bytes exceeds ${MAX_EVENT_LOG_BYTES} bytes (the limit of a document's log)`,
    );
  }
  let log: EventLog;
  try {
    log = parseEventLog(bytes, { maxBytes: MAX_EVENT_LOG_BYTES, maxEvents: MAX_EVENT_LOG_EVENTS });
  } catch (err) {
    if (err instanceof EventLogError) throw new AttestationError('event-log', `the node's ${err.message}`);
    throw err;
  }
  if (!log.banks.includes('sha256')) {
    throw new AttestationError(
      'event-log',
      `the event log has no SHA-256 bank (${log.format} format, banks ${log.banks.join(', ')}): it cannot be checked against the SHA-256 quote`,
    );
  }
  const replay = replayEventLog(log).get('sha256') ?? new Map<number, Buffer>();
  const replayed = new Set<number>();
  const unquoted: number[] = [];
  for (const [pcr, value] of replay) {
    const actual = quoted.get(pcr);
    if (actual === undefined) {
      unquoted.push(pcr);
      continue;
    }
    if (!actual.equals(value)) {
      const count = eventsForPcr(log, pcr).length;
      throw new AttestationError(
        'event-log',
        `event log does not replay to the quoted PCR ${pcr}: its ${count === 1 ? 'event gives' : `${count} events give`} ${value.toString('hex')}, the quote says ${actual.toString('hex')} (events altered, added or removed)`,
      );
    }
    replayed.add(pcr);
  }
  for (const pcr of [...new Set(measured)].sort((a, b) => a - b)) {
    const actual = quoted.get(pcr);
    if (actual === undefined || replay.has(pcr)) continue;
    const reset = initialPcrValue('sha256', pcr, log.startupLocality);
    if (!actual.equals(reset)) {
      throw new AttestationError(
        'event-log',
        `event log does not replay to the quoted PCR ${pcr}: the log has no event for it, the quote says ${actual.toString('hex')}, not its reset value (events removed)`,
      );
    }
  }
  return { log, replayed, unquoted };
}

/** Whether a policy has any rule (an empty object asks for nothing). */
export function hasEventRules(policy: EventPolicy | undefined): policy is EventPolicy {
  return policy !== undefined && Object.values(policy).some((rule) => rule !== undefined);
}

/**
 * Why a checked log does not satisfy the event policy, one message per reason; empty when it does
 * (or there are no rules). With rules, the node must have sent a log, and every PCR the log extends
 * must be quoted: events in a PCR the quote leaves out are unverified claims, so the rules are not
 * read on them at all. For verifiers that report (`constellation verify`) as for those that refuse.
 */
export function eventLogPolicyViolations(
  checked: Pick<CheckedEventLog, 'log' | 'unquoted'> | undefined,
  policy: EventPolicy | undefined,
): string[] {
  if (!hasEventRules(policy)) return [];
  const rules = Object.keys(policy).filter((rule) => policy[rule as keyof EventPolicy] !== undefined);
  if (checked === undefined) {
    return [`the event policy (${rules.join(', ')}) needs the node's event log, and the node sent none`];
  }
  if (checked.unquoted.length > 0) {
    return [
      `the event log extends ${checked.unquoted.length === 1 ? 'PCR' : 'PCRs'} ${checked.unquoted.join(', ')}, which the quote does not cover: those events cannot be checked against the event policy`,
    ];
  }
  return checkEventPolicy(checked.log, policy).map((v) => `${v.message} [rule ${v.rule}]`);
}

/**
 * Applies the event policy to a checked log (eventLogPolicyViolations). Throws AttestationError
 * ("event-policy") naming each broken rule and its event, or why the rules cannot be read.
 */
export function checkEventLogPolicy(checked: CheckedEventLog | undefined, policy: EventPolicy | undefined): void {
  const violations = eventLogPolicyViolations(checked, policy);
  if (violations.length === 0) return;
  const readable = checked !== undefined && checked.unquoted.length === 0;
  throw new AttestationError(
    'event-policy',
    readable ? `event policy not satisfied: ${violations.join('; ')}` : violations.join('; '),
  );
}

/** One event as a refusal or a report shows it: position, type, digest, and what its data says (untrusted). */
export function eventSummary(event: LogEvent): { description: string; digest: string } {
  const view = describeEventData(event);
  const d = view.details;
  const said =
    d.kind === 'text'
      ? d.text
      : d.kind === 'grub-command'
        ? d.command
        : d.kind === 'kernel-command-line'
          ? d.commandLine
          : d.kind === 'uefi-image'
            ? d.devicePath
            : d.kind === 'uefi-variable'
              ? d.name
              : undefined;
  const label = said === undefined ? '' : ` ${JSON.stringify(said)}${view.hashesToDigests ? '' : ' (untrusted)'}`;
  return {
    description: `event ${event.index} ${event.typeName}${label}`,
    digest: event.digests.get('sha256')?.toString('hex') ?? '',
  };
}

/** The events that extended `pcr`, summarised, when the checked log replays to its quoted value. */
export function explainPcr(
  checked: CheckedEventLog | undefined,
  pcr: number,
): { description: string; digest: string }[] | undefined {
  if (checked === undefined || !checked.replayed.has(pcr)) return undefined;
  return checked.log.events.filter((e) => e.pcr === pcr && extendsPcr(e)).map(eventSummary);
}
