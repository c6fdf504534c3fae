// Signed reference measurements: the attack first (a changed value, another signer, another kind
// of key, a set that enforces nothing), each refused naming why; then the genuine file.
import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { AttestationConfigError } from './errors.js';
import { createMeasurementsSigningKey, signMeasurements, verifySignedMeasurements } from './signed-measurements.js';

const pcr = (byte: number): string => Buffer.alloc(32, byte).toString('hex');
const file = Buffer.from(
  JSON.stringify({
    measurements: {
      '4': { expected: pcr(4), warnOnly: false },
      '9': { expected: pcr(9), warnOnly: false },
      '11': { expected: pcr(11), warnOnly: false },
      '15': { expected: pcr(0), warnOnly: false },
    },
  }),
);

describe('signed measurements', () => {
  const release = createMeasurementsSigningKey();

  it('refuses a file changed after signing, naming the check', () => {
    const signature = signMeasurements(file, release.privateKey);
    const changed = Buffer.from(file.toString().replace(pcr(9), pcr(10)));
    expect(() => verifySignedMeasurements(changed, signature, release.publicKey)).toThrow(
      "measurements.json's signature does not verify against the pinned public key: the file was changed, or signed with another key",
    );
  });

  it("refuses a file signed with someone else's key", () => {
    const attacker = createMeasurementsSigningKey();
    expect(() =>
      verifySignedMeasurements(file, signMeasurements(file, attacker.privateKey), release.publicKey),
    ).toThrow('does not verify against the pinned public key');
  });

  it('refuses a pinned key or a signing key of another kind, and a signature that is not one', () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const rsaPublic = rsa.publicKey.export({ type: 'spki', format: 'pem' }).toString();
    expect(() => verifySignedMeasurements(file, 'AAAA', rsaPublic)).toThrow(
      'the pinned public key is not an ECDSA P-256 key',
    );
    const rsaPrivate = rsa.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    expect(() => signMeasurements(file, rsaPrivate)).toThrow('the signing key is not an ECDSA P-256 key');
    expect(() => verifySignedMeasurements(file, 'not base64!', release.publicKey)).toThrow(
      "measurements.json's signature is not base64 of a DER ECDSA signature",
    );
    expect(() => verifySignedMeasurements(file, 'AAAA', 'not a key')).toThrow(
      'the pinned public key is not a PEM public key',
    );
  });

  it('refuses a correctly signed set that enforces no boot measurement', () => {
    const empty = Buffer.from(JSON.stringify({ measurements: { '15': { expected: pcr(0), warnOnly: false } } }));
    const signature = signMeasurements(empty, release.privateKey);
    expect(() => verifySignedMeasurements(empty, signature, release.publicKey)).toThrow(AttestationConfigError);
    expect(() => verifySignedMeasurements(empty, signature, release.publicKey)).toThrow(
      'the measurements enforce no boot measurement (only PCR 15)',
    );
  });

  it('returns the values of a genuine file', () => {
    const { measurements } = verifySignedMeasurements(
      file,
      `${signMeasurements(file, release.privateKey)}\n`,
      release.publicKey,
    );
    expect([...measurements.keys()]).toEqual([4, 9, 11, 15]);
    expect(measurements.get(11)?.expected.toString('hex')).toBe(pcr(11));
  });
});
