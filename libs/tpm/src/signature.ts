import { createHash, verify as cryptoVerify } from 'node:crypto';
import { TPM_ALG } from './constants.js';
import { TpmParseError } from './errors.js';
import { hashAlgorithm, hashAlgorithmId } from './hash-algorithm.js';
import type { HashName } from './hash-algorithm.js';
import { TpmReader, TpmWriter } from './marshal.js';
import { publicKeyObject } from './public-area.js';
import type { TpmPublic } from './public-area.js';

/** A parsed TPMT_SIGNATURE (ECDSA, RSASSA or RSAPSS). */
export type TpmSignature =
  | { algorithm: 'ecdsa'; hash: HashName; r: Buffer; s: Buffer }
  | { algorithm: 'rsassa' | 'rsapss'; hash: HashName; signature: Buffer };

/** Reads a TPMT_SIGNATURE from `r`. */
export function readSignature(r: TpmReader): TpmSignature {
  const alg = r.u16('signature.sigAlg');
  if (alg === TPM_ALG.ECDSA) {
    const hash = hashAlgorithm(r.u16('signature.hash')).name;
    return { algorithm: 'ecdsa', hash, r: r.sized('signature.r', 66), s: r.sized('signature.s', 66) };
  }
  if (alg === TPM_ALG.RSASSA || alg === TPM_ALG.RSAPSS) {
    const hash = hashAlgorithm(r.u16('signature.hash')).name;
    return { algorithm: alg === TPM_ALG.RSASSA ? 'rsassa' : 'rsapss', hash, signature: r.sized('signature.sig', 512) };
  }
  throw new TpmParseError(`TPMT_SIGNATURE: unsupported signature algorithm 0x${alg.toString(16).padStart(4, '0')}`);
}

/** Parses a complete TPMT_SIGNATURE; trailing bytes are an error. */
export function parseSignature(bytes: Uint8Array): TpmSignature {
  if (bytes.length > 1024) throw new TpmParseError(`TPMT_SIGNATURE of ${bytes.length} bytes is too large`);
  const r = new TpmReader(bytes, 'TPMT_SIGNATURE');
  const sig = readSignature(r);
  r.end();
  return sig;
}

/** Marshals a TPMT_SIGNATURE (used by tests to build tampered inputs). */
export function marshalSignature(sig: TpmSignature): Buffer {
  const w = new TpmWriter();
  const hashId = hashAlgorithmId(sig.hash);
  if (sig.algorithm === 'ecdsa') {
    w.u16(TPM_ALG.ECDSA).u16(hashId).sized(sig.r).sized(sig.s);
  } else {
    w.u16(sig.algorithm === 'rsassa' ? TPM_ALG.RSASSA : TPM_ALG.RSAPSS)
      .u16(hashId)
      .sized(sig.signature);
  }
  return w.toBuffer();
}

/**
 * Checks `sig` over `message` with the key in `pub`. The signature's algorithm must match the
 * key type; callers decide which hash algorithms they accept.
 */
export function verifySignature(pub: TpmPublic, message: Uint8Array, sig: TpmSignature): boolean {
  const key = publicKeyObject(pub);
  if (sig.algorithm === 'ecdsa') {
    if (pub.type !== 'ecc') return false;
    // P-256 integers are at most 32 bytes; longer encodings (even with a leading zero) are not
    // canonical and are refused rather than normalised.
    const size = 32;
    if (sig.r.length > size || sig.s.length > size) return false;
    const raw = Buffer.concat([leftPad(sig.r, size), leftPad(sig.s, size)]);
    return cryptoVerify(sig.hash, message, { key, dsaEncoding: 'ieee-p1363' }, raw);
  }
  if (pub.type !== 'rsa') return false;
  if (sig.algorithm === 'rsapss') {
    const saltLength = createHash(sig.hash).digest().length;
    return cryptoVerify(sig.hash, message, { key, padding: 6 /* RSA_PKCS1_PSS_PADDING */, saltLength }, sig.signature);
  }
  return cryptoVerify(sig.hash, message, key, sig.signature);
}

/** Left-pads a big-endian integer of at most `size` bytes to exactly `size` bytes. */
function leftPad(value: Buffer, size: number): Buffer {
  return value.length === size ? value : Buffer.concat([Buffer.alloc(size - value.length), value]);
}
