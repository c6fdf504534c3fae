import { sign, verify } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { nullValue, oid, sequence } from './der-writer.js';

/*
 * The X.509 signature algorithms the join path signs and verifies with, by OID: ECDSA and RSA
 * PKCS#1 v1.5 with SHA-2, which is what kubelets, kubeadm and TPM vendors use (the cluster CA
 * and the EK certificate path both go by this one table). Signing and
 * verifying go to Node's crypto (OpenSSL) directly: a tenth of the cost of WebCrypto through
 * @peculiar/x509, measured on the join path.
 */

interface SignatureAlgorithm {
  readonly keyType: 'ec' | 'rsa';
  readonly hash: 'sha256' | 'sha384' | 'sha512';
}

const ECDSA_WITH_SHA256 = '1.2.840.10045.4.3.2';
const ECDSA_WITH_SHA384 = '1.2.840.10045.4.3.3';
const SHA256_WITH_RSA = '1.2.840.113549.1.1.11';

const ALGORITHMS: ReadonlyMap<string, SignatureAlgorithm> = new Map([
  [ECDSA_WITH_SHA256, { keyType: 'ec', hash: 'sha256' }],
  [ECDSA_WITH_SHA384, { keyType: 'ec', hash: 'sha384' }],
  ['1.2.840.10045.4.3.4', { keyType: 'ec', hash: 'sha512' }],
  [SHA256_WITH_RSA, { keyType: 'rsa', hash: 'sha256' }],
  ['1.2.840.113549.1.1.12', { keyType: 'rsa', hash: 'sha384' }],
  ['1.2.840.113549.1.1.13', { keyType: 'rsa', hash: 'sha512' }],
]);

/** The algorithm (OID) a key signs certificates with: ECDSA with SHA-256 or SHA-384 by curve, RSA with SHA-256. */
export function signatureAlgorithmFor(key: KeyObject): string {
  if (key.asymmetricKeyType === 'ec') {
    return key.asymmetricKeyDetails?.namedCurve === 'secp384r1' ? ECDSA_WITH_SHA384 : ECDSA_WITH_SHA256;
  }
  if (key.asymmetricKeyType === 'rsa') return SHA256_WITH_RSA;
  throw new RangeError(`unsupported signing key type ${key.asymmetricKeyType ?? 'unknown'}`);
}

/**
 * The DER AlgorithmIdentifier of a signature algorithm: RSA ones carry an explicit NULL
 * parameter (RFC 4055 §5), ECDSA ones none (RFC 5758 §3.2).
 */
export function algorithmIdentifier(algorithm: string): Buffer {
  return known(algorithm).keyType === 'rsa' ? sequence(oid(algorithm), nullValue()) : sequence(oid(algorithm));
}

/** Whether `algorithm` is one of the table's (others throw RangeError in the functions here). */
export function isKnownSignatureAlgorithm(algorithm: string): boolean {
  return ALGORITHMS.has(algorithm);
}

function known(algorithm: string): SignatureAlgorithm {
  const found = ALGORITHMS.get(algorithm);
  if (found === undefined) throw new RangeError(`unsupported signature algorithm ${algorithm}`);
  return found;
}

/** The key type `algorithm` signs with; throws RangeError for an algorithm outside the list above. */
export function signatureKeyType(algorithm: string): 'ec' | 'rsa' {
  return known(algorithm).keyType;
}

/** Signs `data` as `algorithm` says (DER-encoded ECDSA signatures, as X.509 carries them). */
export function signWith(algorithm: string, data: Uint8Array, key: KeyObject): Buffer {
  return sign(known(algorithm).hash, data, { key, dsaEncoding: 'der' });
}

/**
 * Whether `signature` over `data` verifies with `key` under `algorithm`. False for a key of the
 * wrong type for the algorithm; throws RangeError for an algorithm outside the list above.
 */
export function verifySignature(algorithm: string, data: Uint8Array, key: KeyObject, signature: Uint8Array): boolean {
  const { keyType, hash } = known(algorithm);
  if (key.asymmetricKeyType !== keyType) return false;
  try {
    return verify(hash, data, { key, dsaEncoding: 'der' }, signature);
  } catch {
    return false; // a malformed signature encoding does not verify
  }
}
