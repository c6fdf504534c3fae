import { TPM_GENERATED_VALUE, TPM_ST } from './constants.js';
import { TpmParseError } from './errors.js';
import { TpmReader } from './marshal.js';
import { readPcrSelections } from './pcr-selection.js';
import type { PcrSelection } from './pcr-selection.js';

/** A parsed TPMS_ATTEST of type TPM_ST_ATTEST_QUOTE. */
export interface QuoteInfo {
  /** Name of the key that signed (qualifiedSigner). */
  qualifiedSigner: Buffer;
  /** The caller's qualifying data: our nonce binding. */
  extraData: Buffer;
  clock: bigint;
  resetCount: number;
  restartCount: number;
  safe: boolean;
  firmwareVersion: bigint;
  pcrSelections: PcrSelection[];
  /** Hash (with the signing scheme's hash) over the selected PCR values, in selection order. */
  pcrDigest: Buffer;
}

/** Largest TPMS_ATTEST we accept; real quotes are ~150 bytes. */
export const MAX_ATTEST_BYTES = 1024;

/**
 * Parses a raw TPMS_ATTEST and insists that it is a TPM-generated quote: magic must be
 * TPM_GENERATED_VALUE and type TPM_ST_ATTEST_QUOTE, and every byte must be accounted for.
 */
export function parseQuoteInfo(bytes: Uint8Array): QuoteInfo {
  if (bytes.length > MAX_ATTEST_BYTES) {
    throw new TpmParseError(`TPMS_ATTEST of ${bytes.length} bytes exceeds ${MAX_ATTEST_BYTES}`);
  }
  const r = new TpmReader(bytes, 'TPMS_ATTEST');
  const magic = r.u32('magic');
  if (magic !== TPM_GENERATED_VALUE) {
    throw new TpmParseError(
      `TPMS_ATTEST: magic is 0x${magic.toString(16)}, not TPM_GENERATED_VALUE (not made by a TPM)`,
    );
  }
  const type = r.u16('type');
  if (type !== TPM_ST.ATTEST_QUOTE) {
    throw new TpmParseError(`TPMS_ATTEST: type is 0x${type.toString(16)}, not TPM_ST_ATTEST_QUOTE`);
  }
  const qualifiedSigner = r.sized('qualifiedSigner', 68);
  const extraData = r.sized('extraData', 64);
  const clock = r.u64('clockInfo.clock');
  const resetCount = r.u32('clockInfo.resetCount');
  const restartCount = r.u32('clockInfo.restartCount');
  const safe = r.u8('clockInfo.safe');
  if (safe > 1) throw new TpmParseError(`TPMS_ATTEST: clockInfo.safe is ${safe}, must be 0 or 1`);
  const firmwareVersion = r.u64('firmwareVersion');
  const pcrSelections = readPcrSelections(r, 'attested.pcrSelect');
  const pcrDigest = r.sized('attested.pcrDigest', 64);
  r.end();
  return {
    qualifiedSigner,
    extraData,
    clock,
    resetCount,
    restartCount,
    safe: safe === 1,
    firmwareVersion,
    pcrSelections,
    pcrDigest,
  };
}
