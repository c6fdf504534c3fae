import { PCR_COUNT } from './constants.js';
import { TpmParseError } from './errors.js';
import { hashAlgorithm, hashAlgorithmId } from './hash-algorithm.js';
import type { HashName } from './hash-algorithm.js';
import type { TpmReader, TpmWriter } from './marshal.js';

/** One bank's selected PCR indices (TPMS_PCR_SELECTION), ascending. */
export interface PcrSelection {
  hash: HashName;
  pcrs: number[];
}

const MAX_BANKS = 8;
const MAX_SELECT_BYTES = 4;

/** Writes a TPML_PCR_SELECTION with a 3-byte bitmap per bank (24 PCRs). */
export function writePcrSelections(w: TpmWriter, selections: readonly PcrSelection[]): void {
  w.u32(selections.length);
  for (const selection of selections) {
    const bitmap = Buffer.alloc(PCR_COUNT / 8);
    for (const pcr of selection.pcrs) {
      if (!Number.isInteger(pcr) || pcr < 0 || pcr >= PCR_COUNT)
        throw new RangeError(`PCR index ${pcr} out of range 0..23`);
      bitmap[pcr >> 3] = (bitmap[pcr >> 3] ?? 0) | (1 << (pcr & 7));
    }
    w.u16(hashAlgorithmId(selection.hash)).u8(bitmap.length).bytes(bitmap);
  }
}

/** Reads a TPML_PCR_SELECTION, rejecting unknown hashes and absurd sizes. */
export function readPcrSelections(r: TpmReader, field = 'pcrSelections'): PcrSelection[] {
  const count = r.u32(`${field}.count`);
  if (count > MAX_BANKS) throw new TpmParseError(`${field}: ${count} banks selected, at most ${MAX_BANKS} allowed`);
  const out: PcrSelection[] = [];
  for (let i = 0; i < count; i++) {
    const hash = hashAlgorithm(r.u16(`${field}[${i}].hash`)).name;
    const size = r.u8(`${field}[${i}].sizeofSelect`);
    if (size > MAX_SELECT_BYTES)
      throw new TpmParseError(`${field}[${i}]: select size ${size} exceeds ${MAX_SELECT_BYTES}`);
    const bitmap = r.bytes(size, `${field}[${i}].pcrSelect`);
    const pcrs: number[] = [];
    for (let bit = 0; bit < size * 8; bit++) {
      if (((bitmap[bit >> 3] ?? 0) >> (bit & 7)) & 1) pcrs.push(bit);
    }
    out.push({ hash, pcrs });
  }
  return out;
}
