import { X509Certificate as NodeX509Certificate, generateKeyPairSync, sign } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { AttestationDocument, TpmQuote } from '@constellation/proto';
import { startSwtpm, useTestEkCa } from '@constellation/testing';
import type { Swtpm } from '@constellation/testing';
import {
  AK_ATTRIBUTES,
  SocketTransport,
  TPM_ALG,
  TPM_ECC,
  Tpm,
  TpmWriter,
  marshalPublic,
  marshalSignature,
  parseQuoteInfo,
  parsePublic,
  pcrCompositeDigest,
  publicKeyObject,
  publicName,
} from '@constellation/tpm';
import type { EccPublic, HashName, QuoteInfo } from '@constellation/tpm';
import fc from 'fast-check';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { quoteExtraData } from './binding.js';
import { decodeDocument, encodeDocument } from './document.js';
import { verifyEkCertificate } from './ek-certificate.js';
import { pemCertificatesToDer } from './pem.js';
import { x509 } from './x509.fixture.js';
import { AttestationError } from './errors.js';
import type { AttestationFailureReason } from './errors.js';
import { componentDigest, expectedMeasurements, measureBoot } from './measured-boot.js';
import type { BootComponent } from './measured-boot.js';
import { TpmIssuer } from './tpm-issuer.js';
import { TpmValidator } from './tpm-validator.js';
import type { ValidationResult } from './validator.js';

// Property-based fuzzing (fast-check, fixed seeds, bounded runs) of the attestation document
// decoder, TpmValidator ('tpm2-ek' and 'qemu-vtpm') and verifyEkCertificate. Real documents and
// a real EK certificate chain come once from a manufactured swtpm; then random bytes,
// protobuf-level byte mutations, field-level mutations of the decoded document and
// TPMS_ATTEST/TPMT_SIGNATURE/TPMT_PUBLIC-level mutations (re-signed with a software key where
// the variant trusts any key) are fed to the validators. Every failure must be an
// AttestationError with a known reason and a message, and nothing that was altered in a way that
// matters may be accepted.

const REASONS: ReadonlySet<AttestationFailureReason> = new Set<AttestationFailureReason>([
  'malformed',
  'variant',
  'attestation-key',
  'weak-hash',
  'signature',
  'nonce',
  'pcr-selection',
  'pcr-digest',
  'measurements',
  'user-data',
  'ek-certificate',
  'ek-public',
  'activation',
  'identity',
]);

/** Reasons seen by the running property: each property checks that it reached the checks it aims at. */
const seen = new Set<AttestationFailureReason | 'accepted'>();

function expectAttestationError(err: unknown, context: () => string): AttestationError {
  if (!(err instanceof AttestationError)) throw new Error(`untyped failure (${context()})`, { cause: err });
  seen.add(err.reason);
  expect(REASONS.has(err.reason)).toBe(true);
  expect(err.message.length).toBeGreaterThan(10);
  return err;
}

// ---------------------------------------------------------------------------------------------
// Byte-level mutations (bit flips, truncations, insertions, deletions, overwritten fields,
// nudged length fields) and protobuf varint corruption.

type Mutation =
  | { kind: 'flip'; at: number; bit: number }
  | { kind: 'truncate'; at: number }
  | { kind: 'insert'; at: number; bytes: Uint8Array }
  | { kind: 'delete'; at: number; count: number }
  | { kind: 'set8'; at: number; value: number }
  | { kind: 'set16'; at: number; value: number }
  | { kind: 'nudge8'; at: number; delta: number }
  | { kind: 'nudge16'; at: number; delta: number }
  | { kind: 'varint'; at: number; bytes: Uint8Array };

const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
  fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
  fc.record({
    kind: fc.constant('insert' as const),
    at: fc.nat(),
    bytes: fc.uint8Array({ minLength: 1, maxLength: 12 }),
  }),
  fc.record({ kind: fc.constant('delete' as const), at: fc.nat(), count: fc.integer({ min: 1, max: 8 }) }),
  fc.record({ kind: fc.constant('set8' as const), at: fc.nat(), value: fc.constantFrom(0, 1, 0x7f, 0x80, 0xff) }),
  fc.record({
    kind: fc.constant('set16' as const),
    at: fc.nat(),
    value: fc.oneof(
      fc.constantFrom(0, 1, 0x20, 0x40, 0x44, 0x100, 0x7fff, 0xffff),
      fc.integer({ min: 0, max: 0xffff }),
    ),
  }),
  fc.record({ kind: fc.constant('nudge8' as const), at: fc.nat(), delta: fc.integer({ min: -3, max: 3 }) }),
  fc.record({ kind: fc.constant('nudge16' as const), at: fc.nat(), delta: fc.integer({ min: -3, max: 3 }) }),
  // A protobuf length or tag replaced by an over-long, huge or unterminated varint.
  fc.record({
    kind: fc.constant('varint' as const),
    at: fc.nat(),
    bytes: fc.constantFrom(
      Uint8Array.from([0xff, 0xff, 0xff, 0xff, 0x0f]),
      Uint8Array.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]),
      Uint8Array.from([0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00]),
      Uint8Array.from([0x80]),
      Uint8Array.from([0x80, 0x00]),
      Uint8Array.from([0x00]),
    ),
  }),
);

const mutationsArb = fc.array(mutationArb, { minLength: 1, maxLength: 4 });

function applyMutation(input: Buffer, m: Mutation): Buffer {
  const out = Buffer.from(input);
  if (out.length === 0) return m.kind === 'insert' || m.kind === 'varint' ? Buffer.from(m.bytes) : out;
  const at = m.at % out.length;
  switch (m.kind) {
    case 'flip':
      out[at] = (out[at] ?? 0) ^ (1 << m.bit);
      return out;
    case 'truncate':
      return out.subarray(0, at);
    case 'insert':
      return Buffer.concat([out.subarray(0, at), m.bytes, out.subarray(at)]);
    case 'delete':
      return Buffer.concat([out.subarray(0, at), out.subarray(at + m.count)]);
    case 'set8':
      out[at] = m.value;
      return out;
    case 'set16':
      if (at + 2 <= out.length) out.writeUInt16BE(m.value, at);
      return out;
    case 'nudge8':
      out[at] = ((out[at] ?? 0) + m.delta) & 0xff;
      return out;
    case 'nudge16':
      if (at + 2 <= out.length) out.writeUInt16BE((out.readUInt16BE(at) + m.delta) & 0xffff, at);
      return out;
    case 'varint':
      return Buffer.concat([out.subarray(0, at), m.bytes, out.subarray(at + 1)]);
  }
}

function mutate(input: Uint8Array, mutations: readonly Mutation[]): Buffer {
  return mutations.reduce(applyMutation, Buffer.from(input));
}

// ---------------------------------------------------------------------------------------------
// Real documents from a manufactured swtpm.

const components: BootComponent[] = [
  { pcr: 4, description: 'kernel', digest: componentDigest('kernel image v1') },
  { pcr: 9, description: 'bootstrapper bundle', digest: componentDigest('bootstrapper.mjs v1') },
];
const measured = [4, 9, 15];
const measurements = expectedMeasurements(components, measured);
/** PCR 4 is only warned about and PCR 9 is expected to differ, so every validation reaches the event log. */
const mismatching = new Map([
  [4, { expected: Buffer.alloc(32, 4), warnOnly: true }],
  [9, { expected: Buffer.alloc(32, 9), warnOnly: false }],
  [15, { expected: Buffer.alloc(32), warnOnly: false }],
]);

const NONCE = Buffer.alloc(32, 0x4e);
const USER_DATA = Buffer.from('fuzzed user data');

const ca = useTestEkCa();
let swtpm: Swtpm;
let tpm: Tpm;

interface Sample {
  name: string;
  document: Buffer;
  validator: TpmValidator;
  /** The validation of the unaltered document. */
  result: ValidationResult;
}

const samples: Sample[] = [];
let ekChain: { certificate: Buffer; intermediates: Buffer[]; roots: Buffer[] };

/** A software attestation key: qemu-vtpm trusts any key, so an attacker can sign anything. */
const software = (() => {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = publicKey.export({ format: 'jwk' });
  const ak: EccPublic = {
    type: 'ecc',
    nameAlg: TPM_ALG.SHA256,
    objectAttributes: AK_ATTRIBUTES,
    authPolicy: Buffer.alloc(0),
    symmetric: { algorithm: TPM_ALG.NULL, keyBits: 0, mode: TPM_ALG.NULL },
    scheme: { scheme: TPM_ALG.ECDSA, hash: TPM_ALG.SHA256 },
    curve: TPM_ECC.NIST_P256,
    kdf: { scheme: TPM_ALG.NULL, hash: TPM_ALG.NULL },
    x: Buffer.from(jwk.x ?? '', 'base64url'),
    y: Buffer.from(jwk.y ?? '', 'base64url'),
  };
  return {
    akPublic: marshalPublic(ak),
    sign(message: Buffer, hash: HashName = 'sha256'): Buffer {
      const raw = sign(hash, message, { key: privateKey, dsaEncoding: 'ieee-p1363' });
      return marshalSignature({ algorithm: 'ecdsa', hash, r: raw.subarray(0, 32), s: raw.subarray(32) });
    },
  };
})();

beforeAll(async () => {
  swtpm = await startSwtpm({ manufacture: { ca: ca() } });
  tpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port, keepConnection: true }));
  const events = await measureBoot(tpm, components);
  const intermediates = pemCertificatesToDer(await readFile(ca().intermediateCertPath, 'utf8'));
  const roots = pemCertificatesToDer(await readFile(ca().rootCertPath, 'utf8'));
  const rooted = await TpmIssuer.rooted(tpm, { ekIntermediates: intermediates, eventLog: () => events });
  const unrooted = new TpmIssuer(tpm, { eventLog: () => events, pcrs: [0, 4, 9, 15] });
  const rsa = new TpmIssuer(tpm, { akAlgorithm: 'rsa', pcrs: measured });
  const ek = new TpmValidator({ variant: 'tpm2-ek', measurements });
  const vtpm = new TpmValidator({ variant: 'qemu-vtpm', measurements });
  const vtpmMismatch = new TpmValidator({ variant: 'qemu-vtpm', measurements: mismatching });
  const add = (name: string, document: Buffer, validator: TpmValidator): void => {
    samples.push({ name, document, validator, result: validator.validate(document, NONCE, USER_DATA) });
  };
  const ekDocument = await rooted.issue(USER_DATA, NONCE);
  add('tpm2-ek (ECC AK)', ekDocument, ek);
  add('qemu-vtpm (ECC AK)', await unrooted.issue(USER_DATA, NONCE), vtpm);
  add('qemu-vtpm (RSA AK)', await rsa.issue(USER_DATA, NONCE), vtpm);
  const certificate = decodeDocument(ekDocument).identity?.ekCertificate;
  if (certificate === undefined) throw new Error('the tpm2-ek document carries no EK certificate');
  ekChain = { certificate: Buffer.from(certificate), intermediates, roots };
  // The mismatch validator refuses the genuine document (PCR 9), so it has no sample of its own.
  expect(() => vtpmMismatch.validate(samples[1]?.document ?? Buffer.alloc(0), NONCE)).toThrow(AttestationError);
}, 60_000);

afterAll(async () => {
  await (tpm as Tpm | undefined)?.close();
  await (swtpm as Swtpm | undefined)?.stop();
});

/** Samples by name, so that a counterexample prints as its name rather than the whole document. */
const sampleArb = (): fc.Arbitrary<Sample> =>
  fc.constantFrom(...samples.map((s) => s.name)).map((name) => {
    const sample = samples.find((s) => s.name === name);
    if (sample === undefined) throw new Error(name);
    return sample;
  });

/**
 * Runs a validation. A refusal must be a typed AttestationError; an acceptance must report
 * exactly what the genuine document attested: same user data, same quoted PCR values, same key.
 */
function validateOutcome(
  sample: Sample,
  document: Uint8Array,
  validator = sample.validator,
): ValidationResult | undefined {
  let result: ValidationResult;
  try {
    result = validator.validate(document, NONCE, USER_DATA);
  } catch (err) {
    expectAttestationError(err, () => `${sample.name}: ${Buffer.from(document).toString('hex')}`);
    return undefined;
  }
  seen.add('accepted');
  expect(result.userData).toEqual(sample.result.userData);
  expect(result.pcrs).toEqual(sample.result.pcrs);
  // The AK's attributes, policy and symmetric fields are not covered by the quote signature: the
  // rooted variant binds them through credential activation on attestationKeyName. So an
  // accepted AK may differ there, but it must hold the same key, and the name must be its own.
  const ak = parsePublic(result.akPublic);
  const genuineAk = parsePublic(sample.result.akPublic);
  expect(publicKeyObject(ak).export({ format: 'jwk' })).toEqual(publicKeyObject(genuineAk).export({ format: 'jwk' }));
  expect(result.attestationKeyName).toBe(publicName(ak).toString('hex'));
  expect(result.variant.name).toBe(sample.result.variant.name);
  return result;
}

// ---------------------------------------------------------------------------------------------
// Field-level mutations of a decoded document.

type DocEdit = (doc: AttestationDocument, pick: number, bytes: Buffer) => void;

function quoteAt(doc: AttestationDocument, pick: number): TpmQuote | undefined {
  return doc.quotes[pick % Math.max(doc.quotes.length, 1)];
}

const DOC_EDITS: Record<string, DocEdit> = {
  variant: (doc, pick) => {
    doc.variant = ['', 'tpm2-ek', 'qemu-vtpm', 'dummy', 'TPM2-EK', 'qemu-vtpm\u0000', 'x'.repeat(300)][pick % 7] ?? '';
  },
  akPublic: (doc, _pick, bytes) => {
    doc.akPublic = bytes;
  },
  userData: (doc, _pick, bytes) => {
    doc.userData = bytes;
  },
  dropQuote: (doc, pick) => {
    doc.quotes.splice(pick % Math.max(doc.quotes.length, 1), 1);
  },
  duplicateQuote: (doc, pick) => {
    const q = quoteAt(doc, pick);
    if (q !== undefined) doc.quotes.push(structuredClone(q));
  },
  manyQuotes: (doc, pick) => {
    const q = quoteAt(doc, 0);
    if (q !== undefined) for (let i = 0; i < 3 + (pick % 4); i++) doc.quotes.push(structuredClone(q));
  },
  attest: (doc, pick, bytes) => {
    const q = quoteAt(doc, pick);
    if (q !== undefined) q.attest = bytes;
  },
  signature: (doc, pick, bytes) => {
    const q = quoteAt(doc, pick);
    if (q !== undefined) q.signature = bytes;
  },
  pcrIndex: (doc, pick) => {
    const q = quoteAt(doc, 0);
    const v = q?.pcrs[pick % Math.max(q.pcrs.length, 1)];
    if (v !== undefined) v.index = [24, 0xffffffff, 0x7fffffff, 255, (v.index + 1) % 24, 15][pick % 6] ?? 24;
  },
  pcrValue: (doc, pick, bytes) => {
    const q = quoteAt(doc, 0);
    const v = q?.pcrs[pick % Math.max(q.pcrs.length, 1)];
    if (v !== undefined) v.value = bytes;
  },
  pcrDuplicate: (doc, pick) => {
    const q = quoteAt(doc, 0);
    const v = q?.pcrs[pick % Math.max(q.pcrs.length, 1)];
    if (q !== undefined && v !== undefined) q.pcrs.push({ ...v });
  },
  pcrDrop: (doc, pick) => {
    const q = quoteAt(doc, 0);
    q?.pcrs.splice(pick % Math.max(q.pcrs.length, 1), 1);
  },
  pcrTooMany: (doc) => {
    const q = quoteAt(doc, 0);
    if (q !== undefined) for (let i = 0; i < 25; i++) q.pcrs.push({ index: i, value: Buffer.alloc(32) });
  },
  eventLog: (doc, pick, bytes) => {
    doc.eventLog.push({
      pcr: [4, 9, 15, 24, 0xffffffff][pick % 5] ?? 4,
      digest: bytes,
      description: bytes.toString('latin1'),
    });
  },
  eventLogHuge: (doc) => {
    for (let i = 0; i < 513; i++) doc.eventLog.push({ pcr: 9, digest: Buffer.alloc(32), description: '' });
  },
  identityDrop: (doc) => {
    delete doc.identity;
  },
  identityEmpty: (doc) => {
    doc.identity = { ekPublic: Buffer.alloc(0), ekCertificate: Buffer.alloc(0), ekIntermediates: [] };
  },
  identityCertificate: (doc, _pick, bytes) => {
    doc.identity = {
      ekPublic: doc.identity?.ekPublic ?? Buffer.alloc(0),
      ekCertificate: bytes,
      ekIntermediates: doc.identity?.ekIntermediates ?? [],
    };
  },
  identityEkPublic: (doc, _pick, bytes) => {
    if (doc.identity !== undefined) doc.identity.ekPublic = bytes;
  },
};

/** Byte strings for fields: random, empty, typical sizes, or the field's own bytes mutated. */
const fieldBytes = (original: fc.Arbitrary<Buffer>): fc.Arbitrary<Buffer> =>
  fc.oneof(
    fc.uint8Array({ maxLength: 80 }).map((b) => Buffer.from(b)),
    fc.constantFrom(Buffer.alloc(0), Buffer.alloc(31), Buffer.alloc(32), Buffer.alloc(33), Buffer.alloc(4096, 0xff)),
    fc.tuple(original, mutationsArb).map(([b, m]) => mutate(b, m)),
  );

// ---------------------------------------------------------------------------------------------
// TPMS_ATTEST-level mutations, re-signed with a software key (qemu-vtpm trusts any key), so that
// the checks behind the signature see them.

interface AttestFields {
  magic: number;
  type: number;
  qualifiedSigner: Buffer;
  extraData: Buffer;
  safe: number;
  selections: { hash: number; bitmap: Buffer }[];
  pcrDigest: Buffer;
}

function fieldsOf(info: QuoteInfo): AttestFields {
  const bitmapOf = (pcrs: number[]): Buffer => {
    const b = Buffer.alloc(3);
    for (const pcr of pcrs) b[pcr >> 3] = (b[pcr >> 3] ?? 0) | (1 << (pcr & 7));
    return b;
  };
  return {
    magic: 0xff544347,
    type: 0x8018,
    qualifiedSigner: info.qualifiedSigner,
    extraData: info.extraData,
    safe: info.safe ? 1 : 0,
    selections: info.pcrSelections.map((s) => ({
      hash: { sha1: TPM_ALG.SHA1, sha256: TPM_ALG.SHA256, sha384: TPM_ALG.SHA384, sha512: TPM_ALG.SHA512 }[s.hash],
      bitmap: bitmapOf(s.pcrs),
    })),
    pcrDigest: info.pcrDigest,
  };
}

function marshalAttest(f: AttestFields): Buffer {
  const w = new TpmWriter().u32(f.magic).u16(f.type).sized(f.qualifiedSigner).sized(f.extraData);
  w.u64(1000n).u32(1).u32(0).u8(f.safe).u64(0n).u32(f.selections.length);
  for (const s of f.selections) w.u16(s.hash).u8(s.bitmap.length).bytes(s.bitmap);
  return w.sized(f.pcrDigest).toBuffer();
}

type AttestEdit = (f: AttestFields, pick: number, bytes: Buffer) => void;

const ATTEST_EDITS: Record<string, AttestEdit> = {
  magic: (f, pick) => {
    f.magic = [0, 0xff544346, 0x47435446][pick % 3] ?? 0;
  },
  type: (f, pick) => {
    f.type = [0x8017, 0x8014, 0][pick % 3] ?? 0;
  },
  extraData: (f, _pick, bytes) => {
    f.extraData = bytes;
  },
  extraDataOneBit: (f, pick) => {
    const b = Buffer.from(f.extraData);
    b[pick % b.length] = (b[pick % b.length] ?? 0) ^ (1 << (pick % 8));
    f.extraData = b;
  },
  safe: (f, pick) => {
    f.safe = [2, 0xff, 0][pick % 3] ?? 2;
  },
  noBank: (f) => {
    f.selections = [];
  },
  twoBanks: (f) => {
    const first = f.selections[0];
    if (first !== undefined) f.selections.push({ ...first });
  },
  sha1Bank: (f) => {
    for (const s of f.selections) s.hash = TPM_ALG.SHA1;
  },
  unknownBank: (f, pick) => {
    for (const s of f.selections) s.hash = [0, 0x0012, 0xffff][pick % 3] ?? 0;
  },
  bitmap: (f, _pick, bytes) => {
    const first = f.selections[0];
    if (first !== undefined) first.bitmap = bytes.subarray(0, 6);
  },
  bitmapBit: (f, pick) => {
    const first = f.selections[0];
    if (first === undefined) return;
    const b = Buffer.from(first.bitmap);
    b[(pick >> 3) % b.length] = (b[(pick >> 3) % b.length] ?? 0) ^ (1 << (pick & 7));
    first.bitmap = b;
  },
  manyBanks: (f) => {
    const first = f.selections[0];
    if (first !== undefined) for (let i = 0; i < 9; i++) f.selections.push({ ...first });
  },
  pcrDigest: (f, _pick, bytes) => {
    f.pcrDigest = bytes;
  },
  qualifiedSigner: (f, _pick, bytes) => {
    f.qualifiedSigner = bytes;
  },
};

beforeEach(() => {
  seen.clear();
});

/** The property reached each of these checks at least once (so it still tests what it claims to). */
function expectReached(...outcomes: (AttestationFailureReason | 'accepted')[]): void {
  expect([...seen].sort()).toEqual(expect.arrayContaining(outcomes));
}

describe('attestation documents under hostile input (fast-check)', () => {
  it('the genuine documents validate (tpm2-ek and qemu-vtpm, ECC and RSA keys)', () => {
    expect(samples.map((s) => s.name)).toHaveLength(3);
    for (const sample of samples) expect(validateOutcome(sample, sample.document)).toBeDefined();
  });

  it('random bytes: decodeDocument and validate throw AttestationError', () => {
    fc.assert(
      fc.property(sampleArb(), fc.uint8Array({ maxLength: 600 }), (sample, bytes) => {
        try {
          decodeDocument(bytes);
        } catch (err) {
          expectAttestationError(err, () => Buffer.from(bytes).toString('hex'));
        }
        validateOutcome(sample, bytes);
      }),
      { seed: 0xa77e01, numRuns: 1500 },
    );
    expectReached('malformed');
  });

  it('protobuf-level byte mutations of real documents: refused with AttestationError, or the same attestation', () => {
    fc.assert(
      fc.property(sampleArb(), mutationsArb, (sample, mutations) => {
        validateOutcome(sample, mutate(sample.document, mutations));
      }),
      { seed: 0xa77e02, numRuns: 2000 },
    );
    expectReached('malformed', 'signature', 'variant', 'nonce', 'pcr-digest', 'accepted');
  });

  it('field-level mutations of decoded documents: refused with AttestationError, or the same attestation', () => {
    const editNames = Object.keys(DOC_EDITS);
    fc.assert(
      fc.property(
        sampleArb(),
        fc.array(fc.tuple(fc.constantFrom(...editNames), fc.nat(), fc.uint8Array({ maxLength: 80 })), {
          minLength: 1,
          maxLength: 3,
        }),
        fc.nat(),
        (sample, edits, which) => {
          const doc = decodeDocument(sample.document);
          const originals: Record<string, Buffer> = {
            akPublic: Buffer.from(doc.akPublic),
            attest: Buffer.from(doc.quotes[0]?.attest ?? []),
            signature: Buffer.from(doc.quotes[0]?.signature ?? []),
            identityCertificate: Buffer.from(doc.identity?.ekCertificate ?? []),
            identityEkPublic: Buffer.from(doc.identity?.ekPublic ?? []),
          };
          for (const [name, pick, random] of edits) {
            const original = originals[name];
            // Half the time the field's own bytes, mutated (structure-aware), else random bytes.
            const bytes =
              original !== undefined && which % 2 === 0
                ? mutate(original, [
                    { kind: 'flip', at: pick, bit: pick % 8 },
                    { kind: 'nudge16', at: random.length * 7 + pick, delta: (pick % 5) - 2 },
                  ])
                : Buffer.from(random);
            DOC_EDITS[name]?.(doc, pick, bytes);
          }
          const encoded = encodeDocument(doc);
          validateOutcome(sample, encoded);
          // The same edits reach the event-log explanation when the measurements differ.
          try {
            new TpmValidator({ variant: 'qemu-vtpm', measurements: mismatching }).validate(encoded, NONCE);
          } catch (err) {
            expectAttestationError(err, () => `mismatch validator: ${encoded.toString('hex')}`);
          }
        },
      ),
      { seed: 0xa77e03, numRuns: 1500 },
    );
    expectReached(
      'variant',
      'attestation-key',
      'signature',
      'malformed',
      'pcr-selection',
      'ek-certificate',
      'measurements',
      'accepted',
    );
  });

  it('TPMS_ATTEST, TPMT_SIGNATURE and TPMT_PUBLIC byte mutations in place: refused, or the same attestation', () => {
    fc.assert(
      fc.property(
        sampleArb(),
        fc.constantFrom('attest', 'signature', 'akPublic'),
        mutationsArb,
        (sample, field, mutations) => {
          const doc = decodeDocument(sample.document);
          const quote = doc.quotes[0];
          if (quote === undefined) throw new Error('no quote');
          if (field === 'attest') quote.attest = mutate(quote.attest, mutations);
          else if (field === 'signature') quote.signature = mutate(quote.signature, mutations);
          else doc.akPublic = mutate(doc.akPublic, mutations);
          validateOutcome(sample, encodeDocument(doc));
        },
      ),
      { seed: 0xa77e04, numRuns: 2000 },
    );
    expectReached('attestation-key', 'malformed', 'signature', 'weak-hash', 'accepted');
  });

  it('re-signed TPMS_ATTEST mutations (qemu-vtpm, software key): refused, or exactly the quoted values', () => {
    const base = samples.find((s) => s.name === 'qemu-vtpm (ECC AK)');
    if (base === undefined) throw new Error('no qemu-vtpm sample');
    const genuine = decodeDocument(base.document);
    const genuineQuote = genuine.quotes[0];
    if (genuineQuote === undefined) throw new Error('no quote');
    const fields = fieldsOf(parseQuoteInfo(genuineQuote.attest));
    // The software key's own document: same quote content, re-signed, accepted as qemu-vtpm.
    const resigned = (attest: Buffer, hash: HashName = 'sha256', pcrs = genuineQuote.pcrs): Buffer =>
      encodeDocument({
        ...genuine,
        akPublic: software.akPublic,
        quotes: [{ attest, signature: software.sign(attest, hash), pcrs }],
      });
    const accepted = base.validator.validate(resigned(marshalAttest(fields)), NONCE, USER_DATA);
    expect(accepted.pcrs).toEqual(base.result.pcrs);
    const editNames = Object.keys(ATTEST_EDITS);
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom(...editNames), fc.nat(), fieldBytes(fc.constant(Buffer.alloc(32)))), {
          minLength: 1,
          maxLength: 3,
        }),
        fc.option(mutationsArb, { freq: 3 }),
        fc.constantFrom<HashName>('sha256', 'sha256', 'sha1', 'sha384'),
        (edits, bytewise, hash) => {
          const f = structuredClone(fields);
          for (const [name, pick, bytes] of edits) ATTEST_EDITS[name]?.(f, pick, bytes);
          const attest = bytewise === null ? marshalAttest(f) : mutate(marshalAttest(f), bytewise);
          const document = resigned(attest, hash);
          let result: ValidationResult;
          try {
            result = base.validator.validate(document, NONCE, USER_DATA);
          } catch (err) {
            expectAttestationError(err, () => `re-signed attest ${attest.toString('hex')}`);
            return;
          }
          // Accepted: the quote must still bind this nonce and user data, select exactly the SHA-256
          // PCRs whose values were returned, and digest exactly those values.
          const info = parseQuoteInfo(attest);
          expect(info.extraData).toEqual(quoteExtraData(USER_DATA, NONCE));
          expect(info.pcrSelections).toHaveLength(1);
          expect(info.pcrSelections[0]?.hash).toBe('sha256');
          const selected = info.pcrSelections[0]?.pcrs ?? [];
          expect([...result.pcrs.keys()].sort((a, b) => a - b)).toEqual(selected);
          expect(pcrCompositeDigest(result.pcrs, selected)).toEqual(info.pcrDigest);
          for (const [pcr, m] of measurements) expect(result.pcrs.get(pcr)).toEqual(m.expected);
          expect(hash).toBe('sha256');
        },
      ),
      { seed: 0xa77e05, numRuns: 1500 },
    );
    expectReached('malformed', 'weak-hash', 'nonce', 'pcr-selection', 'pcr-digest');
  });

  it('re-signed PCR value lists (qemu-vtpm, software key): refused unless they match the quote exactly', () => {
    const base = samples.find((s) => s.name === 'qemu-vtpm (ECC AK)');
    if (base === undefined) throw new Error('no qemu-vtpm sample');
    const genuine = decodeDocument(base.document);
    const quote = genuine.quotes[0];
    if (quote === undefined) throw new Error('no quote');
    const attest = Buffer.from(quote.attest);
    const signature = software.sign(attest);
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            index: fc.oneof(fc.constantFrom(0, 4, 9, 15, 23, 24, 0xffffffff), fc.nat()),
            value: fc.oneof(
              fc.constantFrom(...quote.pcrs.map((p) => Buffer.from(p.value))),
              fc.uint8Array({ minLength: 31, maxLength: 33 }).map((b) => Buffer.from(b)),
            ),
          }),
          { maxLength: 8 },
        ),
        (pcrs) => {
          const document = encodeDocument({
            ...genuine,
            akPublic: software.akPublic,
            quotes: [{ attest, signature, pcrs }],
          });
          validateOutcome(base, document);
        },
      ),
      { seed: 0xa77e06, numRuns: 1000 },
    );
    expectReached('pcr-selection');
  });
});

describe('verifyEkCertificate under hostile input (fast-check)', () => {
  /** Independent check with OpenSSL: the certificate parses and its signature verifies with one of `issuers`. */
  function opensslVerifies(der: Buffer, issuers: readonly Buffer[]): boolean {
    try {
      const cert = new NodeX509Certificate(der);
      return issuers.some((issuer) => cert.verify(new NodeX509Certificate(issuer).publicKey));
    } catch {
      return false;
    }
  }

  it('the genuine chain verifies', async () => {
    const verified = await verifyEkCertificate(ekChain);
    expect(verified.path).toHaveLength(3);
    expect(opensslVerifies(ekChain.certificate, ekChain.intermediates)).toBe(true);
  });

  it('mutated EK certificates: AttestationError("ek-certificate"), or a certificate whose signature still verifies', async () => {
    const original = ekChain.certificate;
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          { arbitrary: mutationsArb.map((m) => mutate(original, m)), weight: 8 },
          { arbitrary: fc.uint8Array({ maxLength: 400 }).map((b) => Buffer.from(b)), weight: 1 },
          {
            arbitrary: fc.tuple(fc.nat(), fc.integer({ min: 1, max: 64 })).map(([at, n]) => {
              // DER tag/length confusion: a length byte in the first 64 bytes changed.
              const b = Buffer.from(original);
              const i = 1 + (at % 63);
              b[i] = ((b[i] ?? 0) + n) & 0xff;
              return b;
            }),
            weight: 2,
          },
        ),
        async (certificate) => {
          try {
            await verifyEkCertificate({ ...ekChain, certificate });
          } catch (err) {
            const e = expectAttestationError(err, () => certificate.toString('hex'));
            expect(e.reason).toBe('ek-certificate');
            return;
          }
          // Accepted: OpenSSL must agree that it is a certificate signed by the intermediate.
          expect(opensslVerifies(certificate, ekChain.intermediates)).toBe(true);
        },
      ),
      { seed: 0xa77e07, numRuns: 600 },
    );
    expectReached('ek-certificate');
  });

  it('mutated intermediates and roots: AttestationError("ek-certificate"), never a path through a broken signature', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('intermediate', 'root'), mutationsArb, async (which, mutations) => {
        const intermediates = ekChain.intermediates.map((c) => (which === 'intermediate' ? mutate(c, mutations) : c));
        const roots = ekChain.roots.map((c) => (which === 'root' ? mutate(c, mutations) : c));
        try {
          await verifyEkCertificate({ ...ekChain, intermediates, roots });
        } catch (err) {
          const e = expectAttestationError(err, () => `${which}: ${mutations.length} mutations`);
          expect(e.reason).toBe('ek-certificate');
          return;
        }
        if (which === 'intermediate') {
          // Accepted: OpenSSL agrees on both signatures through the mutated intermediate.
          expect(opensslVerifies(ekChain.certificate, intermediates)).toBe(true);
          expect(intermediates.every((c) => opensslVerifies(c, ekChain.roots))).toBe(true);
        } else {
          // A pinned root is trusted by its key (its own signature and dates do not matter), so a
          // mutated root may only work when its key is intact.
          const spki = (der: Buffer): Buffer => Buffer.from(new x509.X509Certificate(der).publicKey.rawData);
          expect(roots.map(spki)).toEqual(ekChain.roots.map(spki));
        }
      }),
      { seed: 0xa77e08, numRuns: 200 },
    );
    expectReached('ek-certificate');
  });

  it('the mutated public key of an accepted path is never the genuine EK key unless the bytes are', async () => {
    // A mutated certificate that is accepted must carry the same SPKI as the original (the signature covers it).
    const genuine = await verifyEkCertificate(ekChain);
    await fc.assert(
      fc.asyncProperty(mutationsArb, async (mutations) => {
        const certificate = mutate(ekChain.certificate, mutations);
        const verified = await verifyEkCertificate({ ...ekChain, certificate }).catch((err: unknown) => {
          expectAttestationError(err, () => certificate.toString('hex'));
          return undefined;
        });
        if (verified !== undefined) {
          expect(verified.spki).toEqual(genuine.spki);
          expect(verified.serialNumber).toBe(genuine.serialNumber);
        }
      }),
      { seed: 0xa77e09, numRuns: 300 },
    );
    expectReached('ek-certificate');
  });
});
