import { randomBytes } from 'node:crypto';
import type { AttestationDocument } from '@constellation/proto';
import { startSwtpm } from '@constellation/testing';
import type { Swtpm } from '@constellation/testing';
import {
  SocketTransport,
  TPMA_OBJECT,
  TPM_ALG,
  Tpm,
  akTemplate,
  marshalSignature,
  parseSignature,
} from '@constellation/tpm';
import type { TpmPublic } from '@constellation/tpm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quoteExtraData } from './binding.js';
import { MAX_DOCUMENT_BYTES, decodeDocument, encodeDocument } from './document.js';
import { AttestationError } from './errors.js';
import type { AttestationFailureReason } from './errors.js';
import { componentDigest, expectedMeasurements, measureBoot } from './measured-boot.js';
import type { BootComponent } from './measured-boot.js';
import type { Measurements } from './measurements.js';
import { TpmIssuer } from './tpm-issuer.js';
import { TpmValidator } from './tpm-validator.js';

const components: BootComponent[] = [
  { pcr: 4, description: 'kernel', digest: componentDigest('kernel image v1') },
  { pcr: 9, description: 'bootstrapper bundle', digest: componentDigest('bootstrapper.mjs v1') },
];
const measured = [4, 9, 15];

let swtpm: Swtpm;
let tpm: Tpm;
let issuer: TpmIssuer;
let validator: TpmValidator;

beforeAll(async () => {
  swtpm = await startSwtpm();
  tpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port, keepConnection: true }));
  await tpm.startup();
  const events = await measureBoot(tpm, components);
  issuer = new TpmIssuer(tpm, { eventLog: () => events });
  validator = new TpmValidator({ variant: 'qemu-vtpm', measurements: expectedMeasurements(components, measured) });
});

afterAll(async () => {
  await tpm.close();
  await swtpm.stop();
});

/** Runs a validation that must fail and returns its error. */
function rejection(validate: () => unknown): AttestationError {
  let err: unknown;
  try {
    validate();
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(AttestationError);
  return err as AttestationError;
}

function expectReason(validate: () => unknown, reason: AttestationFailureReason, message: RegExp): void {
  const err = rejection(validate);
  expect(err.reason).toBe(reason);
  expect(err.message).toMatch(message);
}

/** Decodes, edits and re-encodes a document: what an attacker on the wire can do. */
function edit(document: Buffer, change: (doc: AttestationDocument) => void): Buffer {
  const doc = decodeDocument(document);
  change(doc);
  return encodeDocument(doc);
}

describe('TpmIssuer and TpmValidator on a real swtpm', () => {
  it('accepts a fresh document and returns the user data and quoted PCRs', async () => {
    const userData = randomBytes(32);
    const nonce = randomBytes(32);
    const result = validator.validate(await issuer.issue(userData, nonce), nonce, userData);
    expect(result.userData).toEqual(userData);
    expect(result.pcrs.size).toBe(24);
    expect(result.pcrs.get(15)).toEqual(Buffer.alloc(32));
    expect(result.warnings).toEqual([]);
    expect(result.attestationKeyName).toMatch(/^000b[0-9a-f]{64}$/);
  });

  it('accepts RSA attestation keys too', async () => {
    const rsa = new TpmIssuer(tpm, { akAlgorithm: 'rsa' });
    const nonce = randomBytes(32);
    expect(validator.validate(await rsa.issue(Buffer.from('u'), nonce), nonce)).toBeDefined();
  });

  it('rejects the wrong nonce: a document replayed from an earlier exchange', async () => {
    const document = await issuer.issue(Buffer.from('user'), randomBytes(32));
    expectReason(() => validator.validate(document, randomBytes(32)), 'nonce', /not bound to this nonce/);
  });

  it('rejects altered user data, and user data other than what the caller expects', async () => {
    const nonce = randomBytes(32);
    const document = await issuer.issue(Buffer.from('my tls key'), nonce);
    const swapped = edit(document, (doc) => (doc.userData = Buffer.from('attacker tls key')));
    expectReason(() => validator.validate(swapped, nonce), 'nonce', /user data altered/);
    expectReason(() => validator.validate(document, nonce, Buffer.from('other key')), 'user-data', /does not match/);
  });

  it('rejects a flipped bit in the quote and in the signature', async () => {
    const nonce = randomBytes(32);
    const document = await issuer.issue(Buffer.alloc(0), nonce);
    const quoteFlip = edit(document, (doc) => {
      const attest = Buffer.from(doc.quotes[0]!.attest);
      attest[attest.length - 1]! ^= 0x01; // inside the PCR digest: still well-formed
      doc.quotes[0]!.attest = attest;
    });
    expectReason(() => validator.validate(quoteFlip, nonce), 'signature', /does not verify/);
    const sigFlip = edit(document, (doc) => {
      const sig = Buffer.from(doc.quotes[0]!.signature);
      sig[sig.length - 1]! ^= 0x80;
      doc.quotes[0]!.signature = sig;
    });
    expectReason(() => validator.validate(sigFlip, nonce), 'signature', /does not verify/);
  });

  it('rejects PCR values that do not match the signed digest', async () => {
    const nonce = randomBytes(32);
    const document = await issuer.issue(Buffer.alloc(0), nonce);
    // An attacker rewrites PCR 9 to the expected value, hoping the validator trusts the list.
    const forged = edit(document, (doc) => {
      const pcr9 = doc.quotes[0]!.pcrs.find((p) => p.index === 9)!;
      pcr9.value = Buffer.alloc(32, 0x42);
    });
    expectReason(() => validator.validate(forged, nonce), 'pcr-digest', /do not match the quoted PCR digest/);
    const dropped = edit(document, (doc) => (doc.quotes[0]!.pcrs = doc.quotes[0]!.pcrs.filter((p) => p.index !== 4)));
    expectReason(() => validator.validate(dropped, nonce), 'pcr-selection', /missing: 4/);
  });

  it('names every mismatching enforced PCR with expected and actual values, and what the node measured', async () => {
    const tampered: BootComponent[] = [
      components[0]!,
      { ...components[1]!, digest: componentDigest('bootstrapper.mjs v2') },
    ];
    const strict = new TpmValidator({ variant: 'qemu-vtpm', measurements: expectedMeasurements(tampered, measured) });
    const nonce = randomBytes(32);
    const document = await issuer.issue(Buffer.alloc(0), nonce);
    const err = rejection(() => strict.validate(document, nonce));
    expect(err.reason).toBe('measurements');
    const expectedPcr9 = expectedMeasurements(tampered, [9]).get(9)!.expected.toString('hex');
    const actualPcr9 = expectedMeasurements(components, [9]).get(9)!.expected.toString('hex');
    expect(err.mismatches).toEqual([
      {
        pcr: 9,
        expected: expectedPcr9,
        actual: actualPcr9,
        warnOnly: false,
        measuredEvents: [{ description: 'bootstrapper bundle', digest: components[1]!.digest.toString('hex') }],
      },
    ]);
    expect(err.message).toContain(`PCR 9: expected ${expectedPcr9}, actual ${actualPcr9}`);
    expect(err.message).toContain('node measured: bootstrapper bundle');
  });

  it('reports warnOnly mismatches as warnings and accepts the node', async () => {
    const measurements: Measurements = new Map([
      [4, { expected: Buffer.alloc(32, 1), warnOnly: true }],
      [9, { expected: expectedMeasurements(components, [9]).get(9)!.expected, warnOnly: false }],
    ]);
    const lenient = new TpmValidator({ variant: 'qemu-vtpm', measurements });
    const nonce = randomBytes(32);
    const result = lenient.validate(await issuer.issue(Buffer.alloc(0), nonce), nonce);
    expect(result.warnings.map((w) => w.pcr)).toEqual([4]);
  });

  it('picks up new measurements on the next validation when given a function', async () => {
    let current: Measurements = expectedMeasurements(components, measured);
    const live = new TpmValidator({ variant: 'qemu-vtpm', measurements: () => current });
    const nonce = randomBytes(32);
    const document = await issuer.issue(Buffer.alloc(0), nonce);
    expect(live.validate(document, nonce)).toBeDefined();
    current = new Map([[4, { expected: Buffer.alloc(32), warnOnly: false }]]);
    expectReason(() => live.validate(document, nonce), 'measurements', /PCR 4: expected 0{64}/);
  });

  it('rejects a node whose PCR 15 already carries a cluster ID', async () => {
    const swtpm2 = await startSwtpm();
    const tpm2 = new Tpm(new SocketTransport({ host: swtpm2.host, port: swtpm2.port }));
    try {
      await measureBoot(tpm2, components);
      await tpm2.pcrEvent(15, randomBytes(32));
      const nonce = randomBytes(32);
      const document = await new TpmIssuer(tpm2).issue(Buffer.alloc(0), nonce);
      const err = rejection(() => validator.validate(document, nonce));
      expect(err.mismatches.map((m) => m.pcr)).toEqual([15]);
    } finally {
      await tpm2.close();
      await swtpm2.stop();
    }
  });

  it('rejects measured PCRs that the quote does not cover', async () => {
    const partial = new TpmIssuer(tpm, { pcrs: [0, 1, 2, 3, 4] });
    const nonce = randomBytes(32);
    const document = await partial.issue(Buffer.alloc(0), nonce);
    expectReason(() => validator.validate(document, nonce), 'pcr-selection', /PCR 9 is measured but not quoted/);
  });

  it('rejects SHA-1: a SHA-1-bank quote and a key that signs with SHA-1', async () => {
    const nonce = randomBytes(32);
    const userData = Buffer.alloc(0);
    const sha1Bank = await tpm.withPrimaryKey('endorsement', akTemplate('ecc'), async (ak) => {
      const quote = await tpm.quote(ak.handle, quoteExtraData(userData, nonce), [{ hash: 'sha1', pcrs: [4, 9, 15] }]);
      const values = await tpm.pcrRead('sha1', [4, 9, 15]);
      return encodeDocument({
        variant: 'qemu-vtpm',
        akPublic: ak.publicBytes,
        quotes: [{ ...quote, pcrs: [...values].map(([index, value]) => ({ index, value })) }],
        userData,
        eventLog: [],
        tcgEventLog: Buffer.alloc(0),
      });
    });
    expectReason(() => validator.validate(sha1Bank, nonce), 'weak-hash', /SHA1 PCR bank/);

    const sha1Key: TpmPublic = { ...akTemplate('ecc'), scheme: { scheme: TPM_ALG.ECDSA, hash: TPM_ALG.SHA1 } };
    const sha1Signed = await tpm.withPrimaryKey('endorsement', sha1Key, async (ak) => {
      const quote = await tpm.quote(ak.handle, quoteExtraData(userData, nonce), [{ hash: 'sha256', pcrs: [4] }]);
      return encodeDocument({
        variant: 'qemu-vtpm',
        akPublic: ak.publicBytes,
        quotes: [{ ...quote, pcrs: [] }],
        userData,
        eventLog: [],
        tcgEventLog: Buffer.alloc(0),
      });
    });
    expectReason(() => validator.validate(sha1Signed, nonce), 'weak-hash', /must sign with SHA-256/);
  });

  it('rejects an attestation key that is not restricted (it could sign forged quotes)', async () => {
    const nonce = randomBytes(32);
    const unrestricted: TpmPublic = {
      ...akTemplate('ecc'),
      objectAttributes: akTemplate('ecc').objectAttributes & ~TPMA_OBJECT.restricted,
    };
    const document = await tpm.withPrimaryKey('endorsement', unrestricted, async (ak) => {
      const quote = await tpm.quote(ak.handle, quoteExtraData(Buffer.alloc(0), nonce), [{ hash: 'sha256', pcrs: [4] }]);
      return encodeDocument({
        variant: 'qemu-vtpm',
        akPublic: ak.publicBytes,
        quotes: [{ ...quote, pcrs: [] }],
        userData: Buffer.alloc(0),
        eventLog: [],
        tcgEventLog: Buffer.alloc(0),
      });
    });
    expectReason(() => validator.validate(document, nonce), 'attestation-key', /not a restricted/);
  });

  it('rejects a signature made by a different attestation key (a relayed quote)', async () => {
    const nonce = randomBytes(32);
    const document = await issuer.issue(Buffer.alloc(0), nonce);
    const otherKey = await tpm.withPrimaryKey('owner', akTemplate('ecc'), (ak) => Promise.resolve(ak.publicBytes));
    const swapped = edit(document, (doc) => (doc.akPublic = otherKey));
    expectReason(() => validator.validate(swapped, nonce), 'signature', /does not verify/);
  });

  it('rejects the wrong variant, truncated, oversized, empty and garbage documents', async () => {
    const nonce = randomBytes(32);
    const document = await issuer.issue(Buffer.alloc(0), nonce);
    const wrongVariant = edit(document, (doc) => (doc.variant = 'dummy'));
    expectReason(() => validator.validate(wrongVariant, nonce), 'variant', /"dummy", expected "qemu-vtpm"/);
    expectReason(
      () => validator.validate(document.subarray(0, document.length - 7), nonce),
      'malformed',
      /not a valid protobuf|no quote|quote 0/,
    );
    expectReason(
      () => validator.validate(Buffer.alloc(MAX_DOCUMENT_BYTES + 1), nonce),
      'malformed',
      new RegExp(`exceeds ${MAX_DOCUMENT_BYTES}`),
    );
    expectReason(() => validator.validate(Buffer.alloc(0), nonce), 'malformed', /empty/);
    expectReason(() => validator.validate(Buffer.from('definitely not an attestation'), nonce), 'malformed', /./);
  });

  it('tampering with the ECDSA signature encoding is caught, whatever the change', async () => {
    const nonce = randomBytes(32);
    const document = await issuer.issue(Buffer.alloc(0), nonce);
    const doc = decodeDocument(document);
    const sig = parseSignature(doc.quotes[0]!.signature);
    if (sig.algorithm !== 'ecdsa') throw new Error('expected an ECDSA AK');
    const variants = [
      { ...sig, r: sig.s, s: sig.r },
      { ...sig, r: Buffer.concat([Buffer.alloc(1), sig.r]) },
      { ...sig, s: Buffer.alloc(32) },
      { ...sig, hash: 'sha384' as const },
    ];
    for (const variant of variants) {
      const forged = edit(document, (d) => (d.quotes[0]!.signature = marshalSignature(variant)));
      const err = rejection(() => validator.validate(forged, nonce));
      expect(['signature', 'weak-hash']).toContain(err.reason);
    }
  });
});
