import { timingSafeEqual } from 'node:crypto';
import type { AttestationDocument, MeasuredEvent, TpmQuote } from '@constellation/proto';
import {
  PCR_COUNT,
  TpmParseError,
  parseQuoteInfo,
  parseSignature,
  pcrCompositeDigest,
  publicName,
  verifySignature,
} from '@constellation/tpm';
import type { QuoteInfo, TpmPublic, TpmSignature } from '@constellation/tpm';
import { checkAttestationKey } from './attestation-key.js';
import { quoteExtraData } from './binding.js';
import { decodeDocument } from './document.js';
import { AttestationError } from './errors.js';
import type { PcrMismatch } from './errors.js';
import { replayEvents } from './measured-boot.js';
import type { Measurements } from './measurements.js';
import type { ValidationResult, Validator } from './validator.js';
import { unrootedVariantWarning, variantByName } from './variant.js';
import type { Variant, VariantName } from './variant.js';
import { errorMessage } from '@constellation/errors';
import type { EventPolicy } from '@constellation/eventlog';
import { checkEventLog, checkEventLogPolicy, explainPcr } from './event-log-check.js';
import type { CheckedEventLog } from './event-log-check.js';

export interface TpmValidatorOptions {
  /** Expected PCR values; a function is called per validation, so a reloaded file takes effect at once. */
  measurements: Measurements | (() => Measurements);
  /**
   * "tpm2-ek" (the default) requires the document to carry the TPM's identity, which the caller
   * must then prove with an EkIdentityVerifier and credential activation; "qemu-vtpm" trusts any key.
   */
  variant?: Extract<VariantName, 'tpm2-ek' | 'qemu-vtpm'>;
  /** Told on every validation under an unrooted variant that its evidence proves no identity. */
  warn?: (message: string) => void;
  /**
   * Rules on the events of the node's TCG event log (Secure Boot, kernel command line, allowed
   * digests), checked after the log's replay and before the PCR values; a function is called per
   * validation, like `measurements`. None: the log is replayed, and read only to explain.
   */
  eventPolicy?: EventPolicy | (() => EventPolicy | undefined);
}

/**
 * Validates TPM quote documents (`tpm2-ek` and `qemu-vtpm`). In order: decode with limits, variant, attestation key
 * shape, then per quote the signature (before trusting anything it says), the nonce binding,
 * the PCR selection and the PCR digest; then the TCG event log, whose replay must give every
 * quoted PCR it extends (before anything else is compared); the event policy; finally the
 * measurements. Every failure is an AttestationError whose reason and message say exactly what
 * was wrong.
 */
export class TpmValidator implements Validator {
  readonly variant: Variant;
  private readonly measurements: () => Measurements;
  private readonly warn: (message: string) => void;
  private readonly eventPolicy: () => EventPolicy | undefined;

  constructor(options: TpmValidatorOptions) {
    const m = options.measurements;
    this.measurements = typeof m === 'function' ? m : () => m;
    const p = options.eventPolicy;
    this.eventPolicy = typeof p === 'function' ? p : () => p;
    this.variant = variantByName(options.variant ?? 'tpm2-ek');
    this.warn = options.warn ?? (() => undefined);
  }

  validate(bytes: Uint8Array, nonce: Uint8Array, expectedUserData?: Uint8Array): ValidationResult {
    const doc = decodeDocument(bytes);
    if (doc.variant !== this.variant.name) {
      throw new AttestationError('variant', `attestation variant is "${doc.variant}", expected "${this.variant.name}"`);
    }
    if (!this.variant.rooted) this.warn(unrootedVariantWarning(this.variant));
    const ak = checkAttestationKey(doc.akPublic);
    const identity = doc.identity;
    if (this.variant.rooted && (identity === undefined || identity.ekCertificate.length === 0)) {
      throw new AttestationError(
        'ek-certificate',
        `a "${this.variant.name}" document must carry the TPM's EK certificate; this one carries none`,
      );
    }
    const extraData = quoteExtraData(doc.userData, nonce);
    const pcrs = new Map<number, Buffer>();
    for (const [i, quote] of doc.quotes.entries()) {
      for (const [pcr, value] of checkQuote(quote, i, ak, extraData)) pcrs.set(pcr, value);
    }
    // The log first: until its replay equals the quote, nothing it says is worth reading.
    const measurements = this.measurements();
    const eventLog = checkEventLog(doc.tcgEventLog, pcrs, measurements.keys());
    checkEventLogPolicy(eventLog, this.eventPolicy());
    const mismatches = compare(measurements, pcrs, doc, eventLog);
    const enforced = mismatches.filter((m) => !m.warnOnly);
    if (enforced.length > 0) {
      throw new AttestationError('measurements', describeMismatches(enforced), enforced);
    }
    if (expectedUserData !== undefined && !constantTimeEqual(doc.userData, expectedUserData)) {
      throw new AttestationError('user-data', 'attested user data does not match what this connection expects');
    }
    return {
      variant: this.variant,
      userData: Buffer.from(doc.userData),
      pcrs,
      warnings: mismatches.filter((m) => m.warnOnly),
      attestationKeyName: publicName(ak).toString('hex'),
      akPublic: Buffer.from(doc.akPublic),
      ...(eventLog === undefined ? {} : { eventLog: eventLog.log, eventLogUnquoted: eventLog.unquoted }),
      ...(this.variant.rooted && identity !== undefined ? { identityClaim: identity } : {}),
    };
  }
}

function checkQuote(quote: TpmQuote, index: number, ak: TpmPublic, extraData: Buffer): Map<number, Buffer> {
  const where = `quote ${index}`;
  let info: QuoteInfo;
  let signature: TpmSignature;
  try {
    info = parseQuoteInfo(quote.attest);
    signature = parseSignature(quote.signature);
  } catch (err) {
    if (err instanceof TpmParseError) throw new AttestationError('malformed', `${where}: ${err.message}`);
    throw err;
  }
  if (signature.hash !== 'sha256') {
    throw new AttestationError(
      'weak-hash',
      `${where}: signed with ${signature.hash.toUpperCase()}, only SHA-256 is accepted`,
    );
  }
  let valid: boolean;
  try {
    valid = verifySignature(ak, quote.attest, signature);
  } catch (err) {
    throw new AttestationError('signature', `${where}: signature cannot be checked: ${errorMessage(err)}`);
  }
  if (!valid) {
    throw new AttestationError(
      'signature',
      `${where}: signature does not verify with the attestation key (quote or signature altered)`,
    );
  }
  if (!constantTimeEqual(info.extraData, extraData)) {
    throw new AttestationError(
      'nonce',
      `${where}: quote is not bound to this nonce and user data (replayed, relayed, or user data altered)`,
    );
  }
  const [bank, ...more] = info.pcrSelections;
  if (bank === undefined || more.length > 0) {
    throw new AttestationError(
      'pcr-selection',
      `${where}: must select exactly one PCR bank, selects ${info.pcrSelections.length}`,
    );
  }
  if (bank.hash !== 'sha256') {
    throw new AttestationError(
      'weak-hash',
      `${where}: quotes the ${bank.hash.toUpperCase()} PCR bank, only SHA-256 is accepted`,
    );
  }
  const provided = new Map<number, Buffer>();
  for (const { index: pcr, value } of quote.pcrs) {
    if (pcr >= PCR_COUNT) throw new AttestationError('pcr-selection', `${where}: PCR index ${pcr} out of range`);
    if (provided.has(pcr)) throw new AttestationError('pcr-selection', `${where}: PCR ${pcr} given twice`);
    if (value.length !== 32)
      throw new AttestationError('pcr-selection', `${where}: PCR ${pcr} value is ${value.length} bytes, expected 32`);
    provided.set(pcr, Buffer.from(value));
  }
  const selected = bank.pcrs;
  const missing = selected.filter((pcr) => !provided.has(pcr));
  const extra = [...provided.keys()].filter((pcr) => !selected.includes(pcr));
  if (missing.length > 0 || extra.length > 0) {
    throw new AttestationError(
      'pcr-selection',
      `${where}: PCR values do not match the quoted selection (missing: ${missing.join(',') || 'none'}; not quoted: ${extra.join(',') || 'none'})`,
    );
  }
  if (!pcrCompositeDigest(provided, selected).equals(info.pcrDigest)) {
    throw new AttestationError(
      'pcr-digest',
      `${where}: PCR values do not match the quoted PCR digest (values altered)`,
    );
  }
  return provided;
}

function compare(
  measurements: Measurements,
  pcrs: ReadonlyMap<number, Buffer>,
  doc: AttestationDocument,
  eventLog: CheckedEventLog | undefined,
): PcrMismatch[] {
  const mismatches: PcrMismatch[] = [];
  for (const [pcr, m] of [...measurements].sort(([a], [b]) => a - b)) {
    const actual = pcrs.get(pcr);
    if (actual === undefined) {
      throw new AttestationError('pcr-selection', `PCR ${pcr} is measured but not quoted`);
    }
    if (!actual.equals(m.expected)) {
      const mismatch: PcrMismatch = {
        pcr,
        expected: m.expected.toString('hex'),
        actual: actual.toString('hex'),
        warnOnly: m.warnOnly,
      };
      const events = explainPcr(eventLog, pcr) ?? explain(doc.eventLog, pcr, actual);
      if (events !== undefined) mismatch.measuredEvents = events;
      mismatches.push(mismatch);
    }
  }
  return mismatches;
}

/** The older list of measured events for `pcr`, if replaying it reproduces the quoted value (otherwise it explains nothing). */
function explain(log: readonly MeasuredEvent[], pcr: number, actual: Buffer): PcrMismatch['measuredEvents'] {
  const events = log.filter((e) => e.pcr === pcr);
  if (events.length === 0 || replayEvents(events, [pcr]).get(pcr)?.equals(actual) !== true) return undefined;
  return events.map((e) => ({ description: e.description, digest: Buffer.from(e.digest).toString('hex') }));
}

function describeMismatches(mismatches: readonly PcrMismatch[]): string {
  const lines = mismatches.map((m) => {
    const events = m.measuredEvents?.map((e) => `${e.description} (sha256:${e.digest})`).join(', ');
    return `PCR ${m.pcr}: expected ${m.expected}, actual ${m.actual}${events === undefined ? '' : `; node measured: ${events}`}`;
  });
  return `measurements do not match: ${lines.join('; ')}`;
}

function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
