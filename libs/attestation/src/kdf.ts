import { createHash, createHmac } from 'node:crypto';

/** Node digest names for the TPM hash algorithms the KDFs are used with. */
export type KdfHash = 'sha1' | 'sha256' | 'sha384' | 'sha512';

// Derivations asking for more than this are a caller bug, not a TPM need (TPM keys are ≤ 512 bits).
const MAX_KDF_BITS = 8192;

function u32(value: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(value);
  return b;
}

/**
 * The TPM encodes a label as the string followed by one zero byte (TPM 2.0 Part 1 §11.4.10.2);
 * a label that already ends in zero is not terminated twice.
 */
function labelBytes(label: string | Uint8Array): Buffer {
  const raw = typeof label === 'string' ? Buffer.from(label, 'latin1') : Buffer.from(label);
  return raw.length > 0 && raw[raw.length - 1] === 0 ? raw : Buffer.concat([raw, Buffer.alloc(1)]);
}

function checkBits(bits: number): void {
  if (!Number.isInteger(bits) || bits <= 0 || bits > MAX_KDF_BITS) {
    throw new RangeError(`KDF output of ${bits} bits: expected an integer from 1 to ${MAX_KDF_BITS}`);
  }
}

/** Keeps the first `bits` bits; the TPM masks the excess leading bits of the first octet. */
function truncate(out: Buffer, bits: number): Buffer {
  const bytes = Math.ceil(bits / 8);
  const result = Buffer.from(out.subarray(0, bytes));
  if (bits % 8 !== 0 && result.length > 0) result[0] = (result[0] ?? 0) & (0xff >> (8 - (bits % 8)));
  return result;
}

/**
 * KDFa (TPM 2.0 Part 1 §11.4.10.2): SP800-108 counter mode with HMAC-hash.
 * Block i = HMAC(key, u32(i) || label || 0x00 || contextU || contextV || u32(bits)).
 */
export function kdfa(
  hash: KdfHash,
  key: Uint8Array,
  label: string | Uint8Array,
  contextU: Uint8Array,
  contextV: Uint8Array,
  bits: number,
): Buffer {
  checkBits(bits);
  const fixed = Buffer.concat([labelBytes(label), contextU, contextV, u32(bits)]);
  const blocks: Buffer[] = [];
  let produced = 0;
  for (let i = 1; produced * 8 < bits; i++) {
    const block = createHmac(hash, key).update(u32(i)).update(fixed).digest();
    blocks.push(block);
    produced += block.length;
  }
  return truncate(Buffer.concat(blocks), bits);
}

/**
 * KDFe (TPM 2.0 Part 1 §11.4.10.3): SP800-56A concatenation KDF.
 * Block i = Hash(u32(i) || Z || label || 0x00 || partyUInfo || partyVInfo); no length field.
 */
export function kdfe(
  hash: KdfHash,
  z: Uint8Array,
  label: string | Uint8Array,
  partyUInfo: Uint8Array,
  partyVInfo: Uint8Array,
  bits: number,
): Buffer {
  checkBits(bits);
  const fixed = Buffer.concat([z, labelBytes(label), partyUInfo, partyVInfo]);
  const blocks: Buffer[] = [];
  let produced = 0;
  for (let i = 1; produced * 8 < bits; i++) {
    const block = createHash(hash).update(u32(i)).update(fixed).digest();
    blocks.push(block);
    produced += block.length;
  }
  return truncate(Buffer.concat(blocks), bits);
}
