import { createHash } from 'node:crypto';
import { TpmParseError } from './errors.js';
import { hashAlgorithm, isKnownHashAlgorithm } from './hash-algorithm.js';
import { TpmReader, TpmWriter } from './marshal.js';

/** TPMS_NV_PUBLIC plus the index's name, as TPM2_NV_ReadPublic reports them. */
export interface NvPublic {
  nvIndex: number;
  nameAlg: number;
  /** TPMA_NV bits. */
  attributes: number;
  authPolicy: Buffer;
  dataSize: number;
  /** nameAlg || H_nameAlg(TPMS_NV_PUBLIC), as the TPM returned it. */
  name: Buffer;
}

/** TPMA_NV bits this client looks at. */
export const TPMA_NV = {
  ppRead: 1 << 16,
  ownerRead: 1 << 17,
  authRead: 1 << 18,
  policyRead: 1 << 19,
  written: 1 << 29,
} as const;

/** Largest NV index this client reads: EK certificates are 1-2 KiB, and a hostile TPM must not make us allocate freely. */
export const MAX_NV_READ_BYTES = 16 * 1024;

const MAX_POLICY = 64;

/** Reads the TPM2B_NV_PUBLIC and TPM2B_NAME of an NV_ReadPublic response and checks that the name matches. */
export function readNvPublic(r: TpmReader): NvPublic {
  const publicBytes = r.sized('nvPublic');
  const name = r.sized('nvName');
  r.end();
  const p = new TpmReader(publicBytes, 'TPMS_NV_PUBLIC');
  const nvIndex = p.u32('nvIndex');
  const nameAlg = p.u16('nameAlg');
  const attributes = p.u32('attributes');
  const authPolicy = p.sized('authPolicy', MAX_POLICY);
  const dataSize = p.u16('dataSize');
  p.end();
  if (!isKnownHashAlgorithm(nameAlg)) {
    throw new TpmParseError(`NV index 0x${nvIndex.toString(16)}: unknown name algorithm 0x${nameAlg.toString(16)}`);
  }
  // The name binds the index's attributes; a mismatch means a confused or lying TPM.
  const { name: hash } = hashAlgorithm(nameAlg);
  const expected = Buffer.concat([
    new TpmWriter().u16(nameAlg).toBuffer(),
    createHash(hash).update(publicBytes).digest(),
  ]);
  if (!expected.equals(name)) {
    throw new TpmParseError(`NV index 0x${nvIndex.toString(16)}: name does not match its public area`);
  }
  return { nvIndex, nameAlg, attributes, authPolicy, dataSize, name };
}
