import { X509Certificate } from 'node:crypto';
import { readEkCertificate } from './ek.js';
import { akTemplate } from './templates.js';
import type { KeyAlgorithm } from './templates.js';
import type { Tpm } from './tpm.js';

/** What a TPM shows of its identity: the RSA EK's certificate and public area, and the AK's. */
export interface EndorsementKeys {
  /** DER, from NV index 0x01c00002; undefined when the TPM was manufactured without one. */
  ekCertificate: Buffer | undefined;
  ekPublic: Buffer;
  akAlgorithm: KeyAlgorithm;
  akPublic: Buffer;
  akName: Buffer;
}

/** The RSA modulus of a certificate's public key; undefined when it is not RSA or not parseable. */
function certifiedModulus(certificate: Buffer): Buffer | undefined {
  try {
    const { n } = new X509Certificate(certificate).publicKey.export({ format: 'jwk' });
    return n === undefined ? undefined : Buffer.from(n, 'base64url');
  } catch {
    return undefined;
  }
}

/**
 * Reads the RSA EK certificate, the RSA EK's public area and the AK's (a primary key in the
 * endorsement hierarchy, so the same on every call). The EK is taken from its persistent handle
 * when that holds exactly the certified key, and regenerated otherwise: tens of milliseconds of
 * RSA key generation, which is also why a starting node reads these early, while the rest of its
 * program loads.
 */
export async function readEndorsementKeys(tpm: Tpm, akAlgorithm: KeyAlgorithm): Promise<EndorsementKeys> {
  const ekCertificate = await readEkCertificate(tpm, 'rsa');
  const modulus = ekCertificate === undefined ? undefined : certifiedModulus(ekCertificate);
  const ekPublic =
    (modulus === undefined ? undefined : await tpm.adoptResidentRsaEk(modulus)) ??
    (await tpm.withEndorsementKey('rsa', (key) => Promise.resolve(key.publicBytes)));
  const { akPublic, akName } = await tpm.withPrimaryKey('endorsement', akTemplate(akAlgorithm), (key) =>
    Promise.resolve({ akPublic: key.publicBytes, akName: key.name }),
  );
  return { ekCertificate, ekPublic, akAlgorithm, akPublic, akName };
}
