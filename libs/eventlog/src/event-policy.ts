import { describeEventData } from './event-data.js';
import type { EventDataView } from './event-data.js';
import { EVENT_TYPES } from './event-types.js';
import type { EventLog, LogEvent } from './parse-event-log.js';
import { extendsPcr } from './replay.js';

/**
 * Rules on what a boot measured, beside PCR values. Only meaningful for a log whose replay equals
 * the quoted PCRs: the verifier checks that first. Every rule reads only data that hashes to the
 * event's digests, so a log cannot claim more than what was extended.
 */
export interface EventPolicy {
  /** Secure Boot must be on: PCR 7's SecureBoot variable event says 1. */
  readonly secureBoot?: 'enabled';
  /** The kernel command lines allowed, exactly; the log must show one and only allowed ones. */
  readonly kernelCommandLines?: readonly string[];
  /** SHA-256 digests (lower-case hex) allowed for EV_EFI_BOOT_SERVICES_APPLICATION events in PCR 4. */
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

/** Every violation of `policy` by `log`; empty when it satisfies every rule. */
export function checkEventPolicy(log: EventLog, policy: EventPolicy): EventPolicyViolation[] {
  const viewed = log.events.filter(extendsPcr).map((event) => ({ event, view: describeEventData(event) }));
  const violations: EventPolicyViolation[] = [];
  if (policy.secureBoot === 'enabled') violations.push(...checkSecureBoot(viewed));
  if (policy.kernelCommandLines !== undefined) {
    violations.push(...checkKernelCommandLines(viewed, policy.kernelCommandLines));
  }
  if (policy.bootApplications !== undefined) violations.push(...checkBootApplications(log, policy.bootApplications));
  if (policy.pcrEventDigests !== undefined) violations.push(...checkPcrEventDigests(log, policy.pcrEventDigests));
  return violations;
}

interface Viewed {
  readonly event: LogEvent;
  readonly view: EventDataView;
}

function checkSecureBoot(viewed: readonly Viewed[]): EventPolicyViolation[] {
  const events = viewed.filter(
    ({ event, view }) =>
      event.pcr === 7 &&
      event.type === EVENT_TYPES.EV_EFI_VARIABLE_DRIVER_CONFIG &&
      view.details.kind === 'uefi-variable' &&
      view.details.secureBootVariable === 'SecureBoot',
  );
  if (events.length === 0) {
    return [
      {
        rule: 'secureBoot',
        event: undefined,
        message: 'Secure Boot must be enabled: the log has no SecureBoot variable event in PCR 7',
      },
    ];
  }
  const out: EventPolicyViolation[] = [];
  for (const { event, view } of events) {
    if (!view.hashesToDigests) {
      out.push({
        rule: 'secureBoot',
        event,
        message: `Secure Boot must be enabled: the SecureBoot variable's data does not hash to its digest ${where(event)}`,
      });
    } else if (view.details.kind === 'uefi-variable' && view.details.secureBoot !== 'enabled') {
      out.push({
        rule: 'secureBoot',
        event,
        message: `Secure Boot must be enabled, the SecureBoot variable is ${view.details.secureBoot ?? 'unreadable'} ${where(event)}`,
      });
    }
  }
  return out;
}

function checkKernelCommandLines(viewed: readonly Viewed[], allowed: readonly string[]): EventPolicyViolation[] {
  const events = viewed.filter(({ view }) => view.details.kind === 'kernel-command-line');
  if (events.length === 0) {
    return [{ rule: 'kernelCommandLines', event: undefined, message: 'the log shows no kernel command line' }];
  }
  const out: EventPolicyViolation[] = [];
  for (const { event, view } of events) {
    if (view.details.kind !== 'kernel-command-line') continue;
    if (!view.hashesToDigests) {
      out.push({
        rule: 'kernelCommandLines',
        event,
        message: `the kernel command line's data does not hash to its digest ${where(event)}`,
      });
    } else if (!allowed.includes(view.details.commandLine)) {
      out.push({
        rule: 'kernelCommandLines',
        event,
        message: `kernel command line ${JSON.stringify(view.details.commandLine)} is not allowed ${where(event)}`,
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
  for (const event of log.events) {
    if (event.type !== EVENT_TYPES.EV_EFI_BOOT_SERVICES_APPLICATION || event.pcr !== 4) continue;
    const digest = event.digests.get('sha256')?.toString('hex') ?? '';
    if (!allowed.includes(digest)) {
      out.push({
        rule: 'bootApplications',
        event,
        message: `boot application digest sha256:${digest} is not allowed ${where(event)}`,
      });
    }
  }
  return out;
}

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
    const events = log.events.filter((event) => event.pcr === pcr && extendsPcr(event));
    if (events.length === 0) {
      out.push({ rule: 'pcrEventDigests', event: undefined, message: `the log shows no event in PCR ${pcr}` });
      continue;
    }
    for (const event of events) {
      const digest = event.digests.get('sha256')?.toString('hex') ?? '';
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
 * The policy a known-good log satisfies (its reference state): Secure Boot as it was when it was
 * on, the kernel command lines it shows, the digests of the boot applications it loaded. Only data
 * that hashes to its digests is taken.
 */
export function eventPolicyFromLog(log: EventLog): EventPolicy {
  const viewed = log.events.filter(extendsPcr).map((event) => ({ event, view: describeEventData(event) }));
  const secureBootOn = viewed.some(
    ({ event, view }) =>
      event.pcr === 7 &&
      view.hashesToDigests &&
      view.details.kind === 'uefi-variable' &&
      view.details.secureBootVariable === 'SecureBoot' &&
      view.details.secureBoot === 'enabled',
  );
  const commandLines = viewed.flatMap(({ view }) =>
    view.hashesToDigests && view.details.kind === 'kernel-command-line' ? [view.details.commandLine] : [],
  );
  const applications = log.banks.includes('sha256')
    ? log.events.flatMap((event) =>
        event.type === EVENT_TYPES.EV_EFI_BOOT_SERVICES_APPLICATION && event.pcr === 4
          ? [event.digests.get('sha256')?.toString('hex') ?? '']
          : [],
      )
    : undefined;
  return {
    ...(secureBootOn ? { secureBoot: 'enabled' as const } : {}),
    ...(commandLines.length > 0 ? { kernelCommandLines: [...new Set(commandLines)] } : {}),
    ...(applications !== undefined && applications.length > 0 ? { bootApplications: [...new Set(applications)] } : {}),
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
