import { isScalar, parseDocument } from 'yaml';
import { z } from 'zod';
import { PCR_COUNT } from '@constellation/tpm';
import { AttestationConfigError } from './errors.js';
import { errorMessage } from '@constellation/errors';
import { parseEventPolicy } from '@constellation/eventlog';
import type { EventPolicy } from '@constellation/eventlog';

/** The expected value of one PCR. */
export interface Measurement {
  /** Expected SHA-256 PCR value (32 bytes). */
  expected: Buffer;
  /** A mismatch is reported as a warning instead of rejecting the node. */
  warnOnly: boolean;
}

/** Expected PCR values by index. Only the PCRs listed here are checked. */
export type Measurements = ReadonlyMap<number, Measurement>;

const MAX_FILE_BYTES = 64 * 1024;

const measurementSchema = z.strictObject({
  expected: z.string().regex(/^[0-9a-fA-F]{64}$/, 'expected 64 hex characters (a SHA-256 PCR value)'),
  warnOnly: z.boolean().default(false),
});

const measurementsSchema = z.record(
  z.string().regex(/^(?:[0-9]|1[0-9]|2[0-3])$/, `expected a PCR index from 0 to ${PCR_COUNT - 1}`),
  measurementSchema,
);
const fileSchema = z.strictObject({ measurements: measurementsSchema });
const attestationFileSchema = z.strictObject({ measurements: measurementsSchema, eventPolicy: z.unknown().optional() });

/** An attestation configuration file: the measurements and, optionally, the rules on boot events. */
export interface AttestationFile {
  measurements: Measurements;
  /** Rules on the events of the node's TCG event log (docs/attestation.md, "Event log"). */
  eventPolicy?: EventPolicy;
}

/** PCR 15 carries the cluster ID mark; see @constellation/nodelock. */
const CLUSTER_PCR = 15;

/**
 * The PCRs a boot measures (firmware 0-7, boot loader 8 and 9, the UKI's stub 11 and 12): only an
 * enforced one of these makes a set judge the boot. PCRs 16 and 23 any process resets at locality
 * 0, and nothing of a boot extends 10, 13 or 14 (10 is IMA's, which the node image does not run).
 */
const BOOT_MEASURED_PCRS: ReadonlySet<number> = new Set([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12]);

/**
 * The rules every measurements set obeys, whatever reads it (the CLI's config, the JoinService's
 * file at start and at every reload). An empty set would accept any machine, and PCR 15 is what
 * tells a fresh node from one that already committed to a cluster, so it is always enforced: zero
 * for nodes that init or join, the cluster's mark where joined nodes are verified (`pcr15`). And
 * at least one boot measurement (a PCR a boot measures, BOOT_MEASURED_PCRS) is enforced: PCR 15 says only whether a node
 * joined a cluster, so with nothing else any software on a genuine TPM passes. The CLI refused
 * such a set and the JoinService's loader did not (issue 42). Throws AttestationConfigError naming
 * the rule.
 */
export function checkMeasurementPolicy(
  measurements: Measurements,
  source = 'measurements',
  pcr15: Buffer = Buffer.alloc(32),
): void {
  if (measurements.size === 0) {
    throw new AttestationConfigError(
      `${source}: the measurements must not be empty: an empty set would accept any machine`,
    );
  }
  const cluster = measurements.get(CLUSTER_PCR);
  if (cluster === undefined) {
    throw new AttestationConfigError(
      `${source}: PCR 15 must be measured: it shows whether a node already committed to a cluster`,
    );
  }
  if (cluster.warnOnly) {
    throw new AttestationConfigError(
      `${source}: PCR 15 must be enforced (warnOnly: false): a warning would let nodes of other clusters through`,
    );
  }
  if (!cluster.expected.equals(pcr15)) {
    throw new AttestationConfigError(
      `${source}: PCR 15 must be expected to be ${pcr15.equals(Buffer.alloc(32)) ? 'zero: a node that inits or joins has not been marked yet' : pcr15.toString('hex')}`,
    );
  }
  const boot = [...measurements.keys()].filter((pcr) => pcr !== CLUSTER_PCR);
  const enforced = boot.filter((pcr) => measurements.get(pcr)?.warnOnly === false);
  if (enforced.some((pcr) => BOOT_MEASURED_PCRS.has(pcr))) return;
  const list = (pcrs: number[], verb: string): string =>
    `${pcrs.length === 1 ? 'PCR' : 'PCRs'} ${[...pcrs].sort((a, b) => a - b).join(', ')} ${pcrs.length === 1 ? 'is' : 'are'} ${verb}`;
  const why =
    boot.length === 0
      ? 'only PCR 15'
      : enforced.length === 0
        ? list(boot, 'warnOnly')
        : `${list(enforced, 'enforced')}, but no boot measures ${enforced.length === 1 ? 'it' : 'them'}: PCRs 16 and 23 any process resets, and the boot extends none of 10, 13, 14; the boot measures 0-9, 11 and 12`;
  throw new AttestationConfigError(
    `${source}: the measurements enforce no boot measurement (${why}): any software on a genuine TPM would pass; enforce the PCRs the node image measures (for example 4 and 9) with warnOnly: false`,
  );
}

/**
 * Parses a measurements file: JSON or YAML, `{"measurements": {"<pcr>": {"expected": "<hex>",
 * "warnOnly": <bool>}}}`. Unknown fields, duplicate keys, bad indices and bad digests are errors
 * that name the field, and the set must obey `checkMeasurementPolicy` (PCR 15 zero, a boot measurement).
 */
export function parseMeasurements(text: string, source = 'measurements'): Measurements {
  return parseFile(text, source, false).measurements;
}

/**
 * Parses an attestation configuration file (the JoinService's join-config key attestationConfig):
 * `measurements` as parseMeasurements reads them, with the same rules (checkMeasurementPolicy),
 * and an optional `eventPolicy` (parseEventPolicy: secureBoot, kernelCommandLines,
 * bootApplications, pcrEventDigests). Errors name the field.
 */
export function parseAttestationFile(text: string, source = 'attestation config'): AttestationFile {
  return parseFile(text, source, true);
}

function parseFile(text: string, source: string, withEventPolicy: boolean): AttestationFile {
  if (Buffer.byteLength(text) > MAX_FILE_BYTES) {
    throw new AttestationConfigError(`${source}: file larger than ${MAX_FILE_BYTES} bytes`);
  }
  // YAML 1.2 is a superset of JSON, and this parser also rejects duplicate keys, which JSON.parse
  // would silently merge; keys are compared as the strings they become, so `4` and `"4"` collide.
  const doc = parseDocument(text, {
    uniqueKeys: (a, b) => keyText(a) === keyText(b),
    prettyErrors: false,
    strict: true,
  });
  if (doc.errors.length > 0) {
    throw new AttestationConfigError(`${source}: not valid JSON or YAML: ${doc.errors[0]?.message ?? 'parse error'}`);
  }
  let content: unknown;
  try {
    // Maps, not objects: a "__proto__" key stays an entry (and is refused as a bad index) instead
    // of vanishing into the prototype. Unresolved aliases and alias bombs only show here.
    content = plain(doc.toJS({ mapAsMap: true, maxAliasCount: 100 }));
  } catch (err) {
    throw new AttestationConfigError(`${source}: not valid JSON or YAML: ${errorMessage(err)}`);
  }
  // zod's record() skips a "__proto__" key; every key must be a PCR index, that one included.
  const entries = (content as { measurements?: unknown } | null)?.measurements;
  if (entries !== null && typeof entries === 'object' && Object.hasOwn(entries, '__proto__')) {
    throw new AttestationConfigError(
      `${source}: measurements.__proto__: expected a PCR index from 0 to ${PCR_COUNT - 1}`,
    );
  }
  const parsed = (withEventPolicy ? attestationFileSchema : fileSchema).safeParse(content);
  if (!parsed.success) {
    throw new AttestationConfigError(`${source}: ${describeIssues(parsed.error.issues)}`);
  }
  let eventPolicy: EventPolicy | undefined;
  const policyValue = 'eventPolicy' in parsed.data ? parsed.data.eventPolicy : undefined;
  if (policyValue !== undefined) {
    try {
      eventPolicy = parseEventPolicy(policyValue, 'eventPolicy');
    } catch (err) {
      throw new AttestationConfigError(`${source}: ${errorMessage(err)}`);
    }
  }
  const out = new Map<number, Measurement>();
  for (const [index, m] of Object.entries(parsed.data.measurements)) {
    out.set(Number(index), { expected: Buffer.from(m.expected, 'hex'), warnOnly: m.warnOnly });
  }
  const measurements = new Map([...out].sort(([a], [b]) => a - b));
  checkMeasurementPolicy(measurements, source);
  return { measurements, ...(eventPolicy === undefined ? {} : { eventPolicy }) };
}

/** The file form parseAttestationFile reads (JSON.stringify it). */
export function attestationFileToJson(
  measurements: Measurements,
  eventPolicy?: EventPolicy,
): ReturnType<typeof measurementsToFile> & { eventPolicy?: EventPolicy } {
  return { ...measurementsToFile(measurements), ...(eventPolicy === undefined ? {} : { eventPolicy }) };
}

/** The file form of `measurements`, with keys in index order (JSON.stringify it, or write YAML). */
export function measurementsToFile(measurements: Measurements): {
  measurements: Record<string, { expected: string; warnOnly: boolean }>;
} {
  const entries = [...measurements].sort(([a], [b]) => a - b);
  return {
    measurements: Object.fromEntries(
      entries.map(([pcr, m]) => [String(pcr), { expected: m.expected.toString('hex'), warnOnly: m.warnOnly }]),
    ),
  };
}

/** A YAML key as the string it becomes in the parsed object. */
function keyText(node: unknown): string {
  return isScalar(node) ? String(node.value) : String(node);
}

/** Plain objects (own properties only, "__proto__" included) from yaml's Maps, recursively. */
function plain(value: unknown): unknown {
  if (value instanceof Map) {
    return Object.fromEntries([...(value as Map<unknown, unknown>)].map(([k, v]) => [String(k), plain(v)]));
  }
  if (Array.isArray(value)) return value.map(plain);
  return value;
}

/** "path: message" for each problem (nested record-key problems unwrapped), so the user sees every field to fix. */
function describeIssues(issues: readonly z.core.$ZodIssue[]): string {
  return issues
    .slice(0, 5)
    .map((issue) => {
      const path = issue.path.map(String).join('.');
      const nested = issue.code === 'invalid_key' ? issue.issues[0]?.message : undefined;
      return `${path === '' ? '(top level)' : path}: ${nested ?? issue.message}`;
    })
    .join('; ');
}
