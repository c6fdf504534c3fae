import { createHash } from 'node:crypto';
import type { HashName } from './hash-algorithm.js';

/**
 * The PCR digest a TPM2_Quote signs: the hash of the selected PCR values concatenated in
 * selection (ascending index) order. A missing value contributes nothing, so the result then
 * cannot match a real quote.
 */
export function pcrCompositeDigest(
  values: ReadonlyMap<number, Uint8Array>,
  pcrs: readonly number[],
  hash: HashName = 'sha256',
): Buffer {
  const digest = createHash(hash);
  for (const pcr of pcrs) digest.update(values.get(pcr) ?? Buffer.alloc(0));
  return digest.digest();
}
