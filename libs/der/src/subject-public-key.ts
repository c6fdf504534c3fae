import type { JsonWebKey } from 'node:crypto';
import { DerFields, TAG, decodeOctetAlignedBits, decodeOid, readOnly } from './der-reader.js';
import type { Tlv } from './der-reader.js';

/*
 * A SubjectPublicKeyInfo (RFC 5280 §4.1.2.7) in its one canonical form, read without OpenSSL:
 * Node's DER import of a public key costs a fifth of a millisecond, its JWK import of an RSA key
 * a few microseconds. Anything else (explicit curve parameters, a compressed point, an RSA
 * algorithm without its NULL) is left to OpenSSL by returning undefined.
 */

export type SpkiKey =
  | { type: 'rsa'; /** Big-endian, no leading zero. */ modulus: Buffer; exponent: Buffer }
  | { type: 'ec'; curve: 'P-256' | 'P-384'; x: Buffer; y: Buffer };

const RSA_ENCRYPTION = '1.2.840.113549.1.1.1';
const EC_PUBLIC_KEY = '1.2.840.10045.2.1';
const CURVES: Readonly<Record<string, { name: 'P-256' | 'P-384'; bytes: number }>> = {
  '1.2.840.10045.3.1.7': { name: 'P-256', bytes: 32 },
  '1.3.132.0.34': { name: 'P-384', bytes: 48 },
};

/** A positive INTEGER's magnitude if it is minimally encoded; undefined otherwise. */
function positive(item: Tlv): Buffer | undefined {
  const { content } = item;
  const [first = 0, second = 0] = content;
  if (content.length === 0 || first >= 0x80) return undefined;
  if (first === 0) return content.length > 1 && second >= 0x80 ? content.subarray(1) : undefined;
  return content;
}

/** An SPKI's AlgorithmIdentifier, still to be read, and its subjectPublicKey bits (whole octets). */
function spkiParts(spki: Buffer): { algorithm: DerFields; key: Buffer } {
  const fields = new DerFields(readOnly(spki, TAG.sequence, 'subjectPublicKeyInfo').content, 'subjectPublicKeyInfo');
  const algorithm = new DerFields(fields.next(TAG.sequence, 'algorithm').content, 'algorithm');
  const key = decodeOctetAlignedBits(fields.next(TAG.bitString, 'subjectPublicKey'), 'subjectPublicKey');
  fields.end();
  return { algorithm, key };
}

/** The subjectPublicKey bits of a DER SubjectPublicKeyInfo (for an EC key: its point). */
export function publicKeyBits(spki: Buffer): Buffer {
  return spkiParts(spki).key;
}

function read(spki: Buffer): SpkiKey | undefined {
  const { algorithm, key } = spkiParts(spki);
  const oid = decodeOid(algorithm.next(TAG.oid, 'algorithm').content);
  if (oid === RSA_ENCRYPTION) {
    algorithm.next(TAG.null, 'parameters');
    algorithm.end();
    const rsa = new DerFields(readOnly(key, TAG.sequence, 'RSAPublicKey').content, 'RSAPublicKey');
    const modulus = positive(rsa.next(TAG.integer, 'modulus'));
    const exponent = positive(rsa.next(TAG.integer, 'publicExponent'));
    rsa.end();
    return modulus === undefined || exponent === undefined ? undefined : { type: 'rsa', modulus, exponent };
  }
  if (oid === EC_PUBLIC_KEY) {
    const curve = CURVES[decodeOid(algorithm.next(TAG.oid, 'namedCurve').content)];
    algorithm.end();
    if (curve === undefined || key.length !== 1 + 2 * curve.bytes || key[0] !== 0x04) return undefined;
    return {
      type: 'ec',
      curve: curve.name,
      x: key.subarray(1, 1 + curve.bytes),
      y: key.subarray(1 + curve.bytes),
    };
  }
  return undefined;
}

/**
 * The key of a DER SubjectPublicKeyInfo when it is an RSA key or an uncompressed P-256/P-384
 * point in the canonical encoding (the encoding OpenSSL writes, byte for byte); undefined for
 * every other input, well-formed or not.
 */
export function readCanonicalSpki(spki: Buffer): SpkiKey | undefined {
  try {
    return read(spki);
  } catch {
    return undefined;
  }
}

/** The JWK of a key read by readCanonicalSpki, for createPublicKey({ format: 'jwk' }). */
export function spkiKeyJwk(key: SpkiKey): JsonWebKey {
  if (key.type === 'rsa') {
    return { kty: 'RSA', n: key.modulus.toString('base64url'), e: key.exponent.toString('base64url') };
  }
  return { kty: 'EC', crv: key.curve, x: key.x.toString('base64url'), y: key.y.toString('base64url') };
}
