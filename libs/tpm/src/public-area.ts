import { createHash, createPublicKey } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { TPM_ALG, TPM_ECC } from './constants.js';
import { TpmParseError } from './errors.js';
import { hashAlgorithm } from './hash-algorithm.js';
import { TpmReader, TpmWriter } from './marshal.js';
import { errorMessage } from '@constellation/errors';

/** TPMT_SYM_DEF_OBJECT; keyBits and mode are 0/NULL when algorithm is NULL. */
export interface SymmetricDefinition {
  algorithm: number;
  keyBits: number;
  mode: number;
}

/** A signing or key-exchange scheme with its hash; hash is TPM_ALG.NULL when scheme is NULL. */
export interface SchemeDefinition {
  scheme: number;
  hash: number;
}

interface PublicCommon {
  nameAlg: number;
  objectAttributes: number;
  authPolicy: Buffer;
  symmetric: SymmetricDefinition;
  scheme: SchemeDefinition;
}

export interface EccPublic extends PublicCommon {
  type: 'ecc';
  curve: number;
  kdf: SchemeDefinition;
  x: Buffer;
  y: Buffer;
}

export interface RsaPublic extends PublicCommon {
  type: 'rsa';
  keyBits: number;
  /** 0 means the default exponent 65537. */
  exponent: number;
  modulus: Buffer;
}

/** A TPMT_PUBLIC for the key types this client supports (ECC P-256, RSA). */
export type TpmPublic = EccPublic | RsaPublic;

const NULL_SYM: SymmetricDefinition = { algorithm: TPM_ALG.NULL, keyBits: 0, mode: TPM_ALG.NULL };
export const NULL_SCHEME: SchemeDefinition = { scheme: TPM_ALG.NULL, hash: TPM_ALG.NULL };
export { NULL_SYM as NULL_SYMMETRIC };

const MAX_POLICY = 64;
const MAX_ECC_COORD = 66;
const MAX_RSA_MODULUS = 512;

/** Marshals a TPMT_PUBLIC (without the TPM2B size prefix). */
export function marshalPublic(pub: TpmPublic): Buffer {
  const w = new TpmWriter();
  w.u16(pub.type === 'ecc' ? TPM_ALG.ECC : TPM_ALG.RSA)
    .u16(pub.nameAlg)
    .u32(pub.objectAttributes)
    .sized(pub.authPolicy);
  w.u16(pub.symmetric.algorithm);
  if (pub.symmetric.algorithm !== TPM_ALG.NULL) w.u16(pub.symmetric.keyBits).u16(pub.symmetric.mode);
  writeScheme(w, pub.scheme);
  if (pub.type === 'ecc') {
    w.u16(pub.curve);
    writeScheme(w, pub.kdf);
    w.sized(pub.x).sized(pub.y);
  } else {
    w.u16(pub.keyBits).u32(pub.exponent).sized(pub.modulus);
  }
  return w.toBuffer();
}

/** Reads a TPMT_PUBLIC from `r`. */
export function readPublic(r: TpmReader): TpmPublic {
  const type = r.u16('public.type');
  const nameAlg = r.u16('public.nameAlg');
  const objectAttributes = r.u32('public.objectAttributes');
  const authPolicy = r.sized('public.authPolicy', MAX_POLICY);
  const symAlg = r.u16('public.symmetric.algorithm');
  const symmetric =
    symAlg === TPM_ALG.NULL
      ? NULL_SYM
      : { algorithm: symAlg, keyBits: r.u16('public.symmetric.keyBits'), mode: r.u16('public.symmetric.mode') };
  const scheme = readScheme(r, 'public.scheme');
  if (type === TPM_ALG.ECC) {
    const curve = r.u16('public.curveID');
    const kdf = readScheme(r, 'public.kdf');
    const x = r.sized('public.unique.x', MAX_ECC_COORD);
    const y = r.sized('public.unique.y', MAX_ECC_COORD);
    return { type: 'ecc', nameAlg, objectAttributes, authPolicy, symmetric, scheme, curve, kdf, x, y };
  }
  if (type === TPM_ALG.RSA) {
    const keyBits = r.u16('public.keyBits');
    const exponent = r.u32('public.exponent');
    const modulus = r.sized('public.unique.rsa', MAX_RSA_MODULUS);
    return { type: 'rsa', nameAlg, objectAttributes, authPolicy, symmetric, scheme, keyBits, exponent, modulus };
  }
  throw new TpmParseError(`public area: unsupported key type 0x${type.toString(16).padStart(4, '0')}`);
}

/** Parses a complete TPMT_PUBLIC; trailing bytes are an error. */
export function parsePublic(bytes: Uint8Array): TpmPublic {
  const r = new TpmReader(bytes, 'TPMT_PUBLIC');
  const pub = readPublic(r);
  r.end();
  return pub;
}

/** The object's TPM name: nameAlg || H_nameAlg(TPMT_PUBLIC). */
export function publicName(pub: TpmPublic): Buffer {
  const alg = hashAlgorithm(pub.nameAlg);
  const prefix = Buffer.alloc(2);
  prefix.writeUInt16BE(pub.nameAlg);
  return Buffer.concat([prefix, createHash(alg.name).update(marshalPublic(pub)).digest()]);
}

/** The public key as a Node KeyObject (ECC P-256 or RSA). */
export function publicKeyObject(pub: TpmPublic): KeyObject {
  if (pub.type === 'ecc') {
    if (pub.curve !== TPM_ECC.NIST_P256) throw new TpmParseError(`unsupported ECC curve 0x${pub.curve.toString(16)}`);
    if (pub.x.length !== 32 || pub.y.length !== 32)
      throw new TpmParseError('ECC P-256 point coordinates must be 32 bytes');
    try {
      return createPublicKey({
        key: { kty: 'EC', crv: 'P-256', x: pub.x.toString('base64url'), y: pub.y.toString('base64url') },
        format: 'jwk',
      });
    } catch (err) {
      // Node refuses points that are not on the curve; a hostile public area must not surface that untyped.
      throw new TpmParseError(`ECC point is not on NIST P-256: ${errorMessage(err)}`);
    }
  }
  if (pub.modulus.length * 8 !== pub.keyBits) {
    throw new TpmParseError(`RSA modulus has ${pub.modulus.length * 8} bits, key claims ${pub.keyBits}`);
  }
  const exponent = Buffer.alloc(4);
  exponent.writeUInt32BE(pub.exponent === 0 ? 65537 : pub.exponent);
  try {
    return createPublicKey({
      key: { kty: 'RSA', n: pub.modulus.toString('base64url'), e: trimLeadingZeros(exponent).toString('base64url') },
      format: 'jwk',
    });
  } catch (err) {
    throw new TpmParseError(`RSA public key is not usable: ${errorMessage(err)}`);
  }
}

function trimLeadingZeros(b: Buffer): Buffer {
  let i = 0;
  while (i < b.length - 1 && b[i] === 0) i++;
  return b.subarray(i);
}

function writeScheme(w: TpmWriter, scheme: SchemeDefinition): void {
  w.u16(scheme.scheme);
  if (scheme.scheme !== TPM_ALG.NULL) w.u16(scheme.hash);
}

function readScheme(r: TpmReader, field: string): SchemeDefinition {
  const scheme = r.u16(`${field}.scheme`);
  return scheme === TPM_ALG.NULL ? NULL_SCHEME : { scheme, hash: r.u16(`${field}.hashAlg`) };
}
