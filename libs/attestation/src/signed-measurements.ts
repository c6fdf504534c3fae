import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { AttestationConfigError } from './errors.js';
import { parseAttestationFile } from './measurements.js';
import type { AttestationFile } from './measurements.js';

/**
 * A node image's reference measurements travel as `measurements.json` (parseAttestationFile's
 * form: measurements and the event policy) with `measurements.json.sig` beside it: an ECDSA
 * P-256 signature with SHA-256 over the file's exact bytes, DER in base64, as `cosign sign-blob`
 * writes it (Constellation signs its images' measurements so). Whoever fetches them checks the
 * signature against a key they pinned before they trust a single value.
 */
export const MEASUREMENTS_SIGNATURE_ALGORITHM = 'ECDSA P-256 with SHA-256 (cosign sign-blob)';

/** A new release signing key pair (PEM: PKCS#8 private, SPKI public). */
export function createMeasurementsSigningKey(): { privateKey: string; publicKey: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return {
    privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicKey: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}

function p256(key: KeyObject, what: string): KeyObject {
  if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1')
    throw new AttestationConfigError(`${what} is not an ECDSA P-256 key (${MEASUREMENTS_SIGNATURE_ALGORITHM})`);
  return key;
}

/** The signature file's text for `file` (base64 DER, no line break). */
export function signMeasurements(file: Uint8Array, privateKeyPem: string): string {
  const key = p256(createPrivateKey(privateKeyPem), 'the signing key');
  return sign('sha256', file, { key, dsaEncoding: 'der' }).toString('base64');
}

/**
 * The measurements of a signed file, once its signature verifies against the pinned key; the
 * values obey the rules every measurements set obeys (checkMeasurementPolicy). Throws
 * AttestationConfigError saying which check failed.
 */
export function verifySignedMeasurements(
  file: Uint8Array,
  signature: string,
  publicKeyPem: string,
  source = 'measurements.json',
): AttestationFile {
  let key: KeyObject;
  try {
    key = createPublicKey(publicKeyPem);
  } catch (err) {
    throw new AttestationConfigError(`the pinned public key is not a PEM public key: ${(err as Error).message}`);
  }
  p256(key, 'the pinned public key');
  const text = signature.trim();
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(text) || text.length > 200)
    throw new AttestationConfigError(`${source}'s signature is not base64 of a DER ECDSA signature`);
  const valid = verify('sha256', file, { key, dsaEncoding: 'der' }, Buffer.from(text, 'base64'));
  if (!valid)
    throw new AttestationConfigError(
      `${source}'s signature does not verify against the pinned public key: the file was changed, or signed with another key`,
    );
  return parseAttestationFile(Buffer.from(file).toString('utf8'), source);
}
