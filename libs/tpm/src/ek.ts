import { EK_CERT_NV_INDEX } from './constants.js';
import { TpmError, TpmParseError } from './errors.js';
import type { Tpm } from './tpm.js';

/** Which EK certificate: RSA-2048, ECC P-256 (matches ekTemplate('ecc')), or ECC P-384 (what swtpm_setup writes). */
export type EkCertificateKind = keyof typeof EK_CERT_NV_INDEX;

/**
 * The DER EK certificate from its TCG NV index, or undefined when the TPM has no such index.
 * NV content may be padded (swtpm_setup pads it), so exactly the outer DER SEQUENCE is returned.
 */
export async function readEkCertificate(tpm: Tpm, kind: EkCertificateKind): Promise<Buffer | undefined> {
  const index = EK_CERT_NV_INDEX[kind];
  let content: Buffer;
  try {
    content = await tpm.nvRead(index);
  } catch (err) {
    // NV_ReadPublic answers TPM_RC_HANDLE for an index that is not defined.
    if (err instanceof TpmError && err.command === 'NV_ReadPublic' && err.rcName === 'TPM_RC_HANDLE') return undefined;
    throw err;
  }
  return derSequence(content, `EK certificate at NV 0x${index.toString(16).padStart(8, '0')}`);
}

/** The leading DER SEQUENCE of `bytes` (tag 0x30, definite length), without anything after it. */
export function derSequence(bytes: Buffer, what: string): Buffer {
  if (bytes.length < 2 || bytes[0] !== 0x30) throw new TpmParseError(`${what} is not a DER SEQUENCE`);
  const first = bytes[1] ?? 0;
  let header = 2;
  let length = first;
  if (first & 0x80) {
    const octets = first & 0x7f;
    // 0x80 is BER's indefinite length; more than 3 length octets is far beyond any NV index.
    if (octets === 0 || octets > 3)
      throw new TpmParseError(`${what}: unsupported DER length form 0x${first.toString(16)}`);
    if (bytes.length < 2 + octets) throw new TpmParseError(`${what}: truncated DER length`);
    length = bytes.readUIntBE(2, octets);
    header = 2 + octets;
  }
  if (header + length > bytes.length) {
    throw new TpmParseError(`${what}: DER SEQUENCE of ${length} bytes, only ${bytes.length - header} present`);
  }
  return bytes.subarray(0, header + length);
}
