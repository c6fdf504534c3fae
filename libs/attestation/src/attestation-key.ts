import { TPM_ALG, TPM_ECC, TPMA_OBJECT, parsePublic } from '@constellation/tpm';
import type { TpmPublic } from '@constellation/tpm';
import { AttestationError } from './errors.js';
import { errorMessage } from '@constellation/errors';

/** Attributes every attestation key must have: a TPM-resident key that only signs TPM-made structures. */
const REQUIRED_AK_ATTRIBUTES =
  TPMA_OBJECT.fixedTPM |
  TPMA_OBJECT.fixedParent |
  TPMA_OBJECT.sensitiveDataOrigin |
  TPMA_OBJECT.restricted |
  TPMA_OBJECT.sign;

/**
 * Parses an attestation key's public area and checks its shape: restricted signing key (never
 * decrypt), SHA-256 name and signatures, ECDSA P-256 or RSA of at least 2048 bits.
 */
export function checkAttestationKey(bytes: Uint8Array): TpmPublic {
  let ak: TpmPublic;
  try {
    ak = parsePublic(bytes);
  } catch (err) {
    throw new AttestationError('attestation-key', `attestation key public area is malformed: ${errorMessage(err)}`);
  }
  if (
    (ak.objectAttributes & REQUIRED_AK_ATTRIBUTES) !== REQUIRED_AK_ATTRIBUTES ||
    (ak.objectAttributes & TPMA_OBJECT.decrypt) !== 0
  ) {
    throw new AttestationError(
      'attestation-key',
      'attestation key is not a restricted, TPM-resident signing key (fixedTPM, fixedParent, sensitiveDataOrigin, restricted, sign; not decrypt)',
    );
  }
  if (ak.nameAlg !== TPM_ALG.SHA256)
    throw new AttestationError('weak-hash', 'attestation key name algorithm must be SHA-256');
  if (ak.type === 'ecc') {
    if (ak.curve !== TPM_ECC.NIST_P256 || ak.scheme.scheme !== TPM_ALG.ECDSA) {
      throw new AttestationError('attestation-key', 'ECC attestation key must be NIST P-256 with the ECDSA scheme');
    }
  } else if (ak.keyBits < 2048 || (ak.scheme.scheme !== TPM_ALG.RSASSA && ak.scheme.scheme !== TPM_ALG.RSAPSS)) {
    throw new AttestationError(
      'attestation-key',
      'RSA attestation key must have at least 2048 bits and an RSASSA or RSAPSS scheme',
    );
  }
  if (ak.scheme.hash !== TPM_ALG.SHA256)
    throw new AttestationError('weak-hash', 'attestation key must sign with SHA-256');
  return ak;
}
