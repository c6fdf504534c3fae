import { COMMAND_LINE_PCRS, readBootApplications, readKernelCommandLines, readSecureBoot } from './boot-state.js';
import type { EventLog, LogEvent } from './parse-event-log.js';
import { eventsForPcr } from './replay.js';

/**
 * Rules on what a boot measured, beside PCR values. Only meaningful for a log whose replay equals
 * the quoted PCRs: the verifier checks that first. Every rule reads only what the TPM binds
 * (digests, their order, data that hashes to its digest; boot-state.ts), never an event's type,
 * so a log can neither claim more than what was extended nor relabel an event out of a rule.
 */
export interface EventPolicy {
  /** Secure Boot must be on: the SecureBoot variable the firmware measured before PCR 7's separator says 1. */
  readonly secureBoot?: 'enabled';
  /**
   * The kernel command lines allowed, exactly: the log must show one in PCR 8 or 12 and only
   * allowed ones. Proves the command line only when the boot loader that measured it is pinned
   * too (bootApplications, or PCR 4 enforced): a loader of the node's own measures what it likes.
   */
  readonly kernelCommandLines?: readonly string[];
  /**
   * SHA-256 digests (lower-case hex) allowed for the code PCR 4 measured: every event there but
   * the firmware's separator and action strings, whatever its type; at least one must appear.
   */
  readonly bootApplications?: readonly string[];
  /**
   * Per PCR (decimal index), the SHA-256 digests (lower-case hex) allowed for every event that
   * extends it, whatever its type; the log must show at least one event there. For measurements
   * of our own, which a boot describes with untrusted data only: the node image's kernel and
   * bootstrapper (mini: PCR 4 and 9), so that relabelling an event cannot move it out of a rule.
   */
  readonly pcrEventDigests?: Readonly<Record<string, readonly string[]>>;
}

/** The rule a violation breaks. */
export type EventPolicyRule = keyof EventPolicy;

/** One reason the log does not satisfy the policy, naming the rule and, where there is one, the event. */
export interface EventPolicyViolation {
  readonly rule: EventPolicyRule;
  readonly event: LogEvent | undefined;
  readonly message: string;
}

const where = (event: LogEvent): string => `(event ${event.index}, PCR ${event.pcr})`;
/** Where an event is, and what the log calls it: a label only, never a reason to believe the event. */
const labelled = (event: LogEvent): string => `(event ${event.index}, PCR ${event.pcr}, labelled ${event.typeName})`;

/** Every violation of `policy` by `log`; empty when it satisfies every rule. */
export function checkEventPolicy(log: EventLog, policy: EventPolicy): EventPolicyViolation[] {
  const violations: EventPolicyViolation[] = [];
  if (policy.secureBoot === 'enabled') violations.push(...checkSecureBoot(log));
  if (policy.kernelCommandLines !== undefined) {
    violations.push(...checkKernelCommandLines(log, policy.kernelCommandLines));
  }
  if (policy.bootApplications !== undefined) violations.push(...checkBootApplications(log, policy.bootApplications));
  if (policy.pcrEventDigests !== undefined) violations.push(...checkPcrEventDigests(log, policy.pcrEventDigests));
  return violations;
}

function checkSecureBoot(log: EventLog): EventPolicyViolation[] {
  const reading = readSecureBoot(log);
  const violation = (message: string, event?: LogEvent): EventPolicyViolation => ({
    rule: 'secureBoot',
    event,
    message: `Secure Boot must be enabled: ${message}`,
  });
  if (!reading.separator) {
    return [violation('PCR 7 has no separator, so nothing in it can be placed before the boot loader ran')];
  }
  const out = reading.unreadable.map((event) =>
    violation(
      `PCR 7 event before its separator does not show what it measured (its data does not hash to its digest), so Secure Boot's state cannot be read ${labelled(event)}`,
      event,
    ),
  );
  if (reading.variables.length === 0 && out.length === 0) {
    out.push(violation("no SecureBoot variable was measured before PCR 7's separator"));
  }
  for (const { event, value } of reading.variables) {
    if (value !== 'enabled') {
      out.push(
        violation(`the SecureBoot variable measured before PCR 7's separator is ${value} ${labelled(event)}`, event),
      );
    }
  }
  return out;
}

function checkKernelCommandLines(log: EventLog, allowed: readonly string[]): EventPolicyViolation[] {
  const reading = readKernelCommandLines(log);
  const out: EventPolicyViolation[] = [
    ...reading.unreadable.map((event) => ({
      rule: 'kernelCommandLines' as const,
      event,
      message: `PCR ${event.pcr} event does not show what it measured (its data does not hash to its digest): it may be the kernel command line ${labelled(event)}`,
    })),
    ...reading.unpaired.map((event) => ({
      rule: 'kernelCommandLines' as const,
      event,
      message: `GRUB's linux command is not followed in PCR 8 by the kernel command line GRUB measures with it ${labelled(event)}`,
    })),
  ];
  if (reading.commandLines.length === 0 && out.length === 0) {
    out.push({
      rule: 'kernelCommandLines',
      event: undefined,
      message: `the log shows no kernel command line (PCR ${COMMAND_LINE_PCRS.join(' or ')}, where boot loaders measure it)`,
    });
  }
  for (const { event, commandLine } of reading.commandLines) {
    if (!allowed.includes(commandLine)) {
      out.push({
        rule: 'kernelCommandLines',
        event,
        message: `kernel command line ${JSON.stringify(commandLine)} is not allowed ${labelled(event)}`,
      });
    }
  }
  return out;
}

function checkBootApplications(log: EventLog, allowed: readonly string[]): EventPolicyViolation[] {
  if (!log.banks.includes('sha256')) {
    return [
      {
        rule: 'bootApplications',
        event: undefined,
        message: 'the log has no SHA-256 bank to compare boot application digests in',
      },
    ];
  }
  const out: EventPolicyViolation[] = [];
  let seen = 0;
  for (const event of readBootApplications(log)) {
    const digest = sha256Of(event);
    if (allowed.includes(digest)) {
      seen++;
      continue;
    }
    out.push({
      rule: 'bootApplications',
      event,
      message: `PCR 4 extends sha256:${digest}, which is not an allowed boot application ${labelled(event)}`,
    });
  }
  if (seen === 0) {
    out.push({
      rule: 'bootApplications',
      event: undefined,
      message: 'the log shows no allowed boot application in PCR 4',
    });
  }
  return out;
}

const sha256Of = (event: LogEvent): string => event.digests.get('sha256')?.toString('hex') ?? '';

function checkPcrEventDigests(
  log: EventLog,
  allowed: Readonly<Record<string, readonly string[]>>,
): EventPolicyViolation[] {
  if (!log.banks.includes('sha256')) {
    return [
      {
        rule: 'pcrEventDigests',
        event: undefined,
        message: 'the log has no SHA-256 bank to compare event digests in',
      },
    ];
  }
  const out: EventPolicyViolation[] = [];
  for (const [index, digests] of Object.entries(allowed).sort(([a], [b]) => Number(a) - Number(b))) {
    const pcr = Number(index);
    const events = eventsForPcr(log, pcr);
    if (events.length === 0) {
      out.push({ rule: 'pcrEventDigests', event: undefined, message: `the log shows no event in PCR ${pcr}` });
      continue;
    }
    for (const event of events) {
      const digest = sha256Of(event);
      if (!digests.includes(digest)) {
        out.push({
          rule: 'pcrEventDigests',
          event,
          message: `${event.typeName} digest sha256:${digest} is not allowed in PCR ${pcr} ${where(event)}`,
        });
      }
    }
  }
  return out;
}

/**
 * The policy a known-good log satisfies (its reference state), read as the rules read it: Secure
 * Boot when the firmware measured it on, the kernel command lines when every event of their PCRs
 * shows what it measured, the digests of the code PCR 4 measured.
 */
export function eventPolicyFromLog(log: EventLog): EventPolicy {
  const secureBootOn = checkSecureBoot(log).length === 0;
  const reading = readKernelCommandLines(log);
  const provable = reading.unreadable.length === 0 && reading.unpaired.length === 0;
  const commandLines = provable ? reading.commandLines.map((c) => c.commandLine) : [];
  const applications = log.banks.includes('sha256') ? readBootApplications(log).map(sha256Of) : [];
  return {
    ...(secureBootOn ? { secureBoot: 'enabled' as const } : {}),
    ...(commandLines.length > 0 ? { kernelCommandLines: [...new Set(commandLines)] } : {}),
    ...(applications.length > 0 ? { bootApplications: [...new Set(applications)] } : {}),
  };
}

const HEX64 = /^[0-9a-f]{64}$/;
const RULES: readonly string[] = ['secureBoot', 'kernelCommandLines', 'bootApplications', 'pcrEventDigests'];

/**
 * Checks an event policy read from a file (JSON or YAML, already parsed): unknown fields and bad
 * values are errors naming the field. Throws RangeError.
 */
export function parseEventPolicy(value: unknown, source = 'eventPolicy'): EventPolicy {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new RangeError(`${source}: expected an object`);
  }
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (!RULES.includes(key)) {
      throw new RangeError(`${source}.${key}: unknown rule (known: ${RULES.join(', ')})`);
    }
  }
  const strings = (key: string, check?: RegExp): string[] | undefined => {
    const list = record[key];
    if (list === undefined) return undefined;
    if (
      !Array.isArray(list) ||
      list.length === 0 ||
      list.some((s) => typeof s !== 'string' || (check !== undefined && !check.test(s)))
    ) {
      throw new RangeError(
        `${source}.${key}: expected a non-empty list of ${check === undefined ? 'strings' : '64 lower-case hex characters (SHA-256 digests)'}`,
      );
    }
    return list as string[];
  };
  if (record.secureBoot !== undefined && record.secureBoot !== 'enabled') {
    throw new RangeError(`${source}.secureBoot: expected "enabled" (or leave the rule out)`);
  }
  const kernelCommandLines = strings('kernelCommandLines');
  const bootApplications = strings('bootApplications', HEX64);
  const pcrEventDigests = perPcrDigests(record.pcrEventDigests, `${source}.pcrEventDigests`);
  return {
    ...(record.secureBoot === 'enabled' ? { secureBoot: 'enabled' as const } : {}),
    ...(kernelCommandLines === undefined ? {} : { kernelCommandLines }),
    ...(bootApplications === undefined ? {} : { bootApplications }),
    ...(pcrEventDigests === undefined ? {} : { pcrEventDigests }),
  };
}

/** `{"9": ["<sha256 hex>", ...]}`: PCR indexes 0 to 23 as keys, non-empty digest lists. */
function perPcrDigests(value: unknown, source: string): Record<string, string[]> | undefined {
  if (value === undefined) return undefined;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new RangeError(`${source}: expected an object of PCR index to SHA-256 digests`);
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length === 0) throw new RangeError(`${source}: expected at least one PCR`);
  const out: Record<string, string[]> = {};
  for (const [pcr, list] of entries) {
    if (!/^(?:[0-9]|1[0-9]|2[0-3])$/.test(pcr)) {
      throw new RangeError(`${source}.${pcr}: expected a PCR index from 0 to 23`);
    }
    if (!Array.isArray(list) || list.length === 0 || list.some((s) => typeof s !== 'string' || !HEX64.test(s))) {
      throw new RangeError(
        `${source}.${pcr}: expected a non-empty list of 64 lower-case hex characters (SHA-256 digests)`,
      );
    }
    out[pcr] = list as string[];
  }
  return out;
}
