import { TPM_ALG, TPM_ECC, TPMA_OBJECT } from './constants.js';
import { NULL_SCHEME, NULL_SYMMETRIC } from './public-area.js';
import type { EccPublic, RsaPublic, TpmPublic } from './public-area.js';

export type KeyAlgorithm = 'ecc' | 'rsa';

/** The attestation key's type unless configured otherwise: ECDSA P-256 signs quotes fastest. */
export const DEFAULT_AK_ALGORITHM: KeyAlgorithm = 'ecc';

/**
 * Policy digest of the TCG EK Credential Profile templates: PolicySecret(TPM_RH_ENDORSEMENT).
 * With it, the EK a TPM derives from its endorsement seed matches its EK certificate.
 */
const EK_POLICY = Buffer.from('837197674484b3f81a90cc8d46a5d724fd52d76e06520b64f2a1da1b331469aa', 'hex');

const EK_ATTRIBUTES =
  TPMA_OBJECT.fixedTPM |
  TPMA_OBJECT.fixedParent |
  TPMA_OBJECT.sensitiveDataOrigin |
  TPMA_OBJECT.adminWithPolicy |
  TPMA_OBJECT.restricted |
  TPMA_OBJECT.decrypt;

/**
 * Attestation keys: restricted signing keys, so the TPM only signs structures it generated
 * itself (a quote cannot be forged by asking the key to sign arbitrary bytes).
 */
export const AK_ATTRIBUTES =
  TPMA_OBJECT.fixedTPM |
  TPMA_OBJECT.fixedParent |
  TPMA_OBJECT.sensitiveDataOrigin |
  TPMA_OBJECT.userWithAuth |
  TPMA_OBJECT.noDA |
  TPMA_OBJECT.restricted |
  TPMA_OBJECT.sign;

const AES128_CFB = { algorithm: TPM_ALG.AES, keyBits: 128, mode: TPM_ALG.CFB };

/** The TCG default EK template (low range): ECC NIST P-256 or RSA 2048. */
export function ekTemplate(algorithm: KeyAlgorithm): TpmPublic {
  if (algorithm === 'ecc') {
    const ecc: EccPublic = {
      type: 'ecc',
      nameAlg: TPM_ALG.SHA256,
      objectAttributes: EK_ATTRIBUTES,
      authPolicy: EK_POLICY,
      symmetric: AES128_CFB,
      scheme: NULL_SCHEME,
      curve: TPM_ECC.NIST_P256,
      kdf: NULL_SCHEME,
      x: Buffer.alloc(32),
      y: Buffer.alloc(32),
    };
    return ecc;
  }
  const rsa: RsaPublic = {
    type: 'rsa',
    nameAlg: TPM_ALG.SHA256,
    objectAttributes: EK_ATTRIBUTES,
    authPolicy: EK_POLICY,
    symmetric: AES128_CFB,
    scheme: NULL_SCHEME,
    keyBits: 2048,
    exponent: 0,
    modulus: Buffer.alloc(256),
  };
  return rsa;
}

/** A restricted signing key for quotes: ECDSA P-256 with SHA-256, or RSASSA 2048 with SHA-256. */
export function akTemplate(algorithm: KeyAlgorithm): TpmPublic {
  if (algorithm === 'ecc') {
    const ecc: EccPublic = {
      type: 'ecc',
      nameAlg: TPM_ALG.SHA256,
      objectAttributes: AK_ATTRIBUTES,
      authPolicy: Buffer.alloc(0),
      symmetric: NULL_SYMMETRIC,
      scheme: { scheme: TPM_ALG.ECDSA, hash: TPM_ALG.SHA256 },
      curve: TPM_ECC.NIST_P256,
      kdf: NULL_SCHEME,
      x: Buffer.alloc(0),
      y: Buffer.alloc(0),
    };
    return ecc;
  }
  const rsa: RsaPublic = {
    type: 'rsa',
    nameAlg: TPM_ALG.SHA256,
    objectAttributes: AK_ATTRIBUTES,
    authPolicy: Buffer.alloc(0),
    symmetric: NULL_SYMMETRIC,
    scheme: { scheme: TPM_ALG.RSASSA, hash: TPM_ALG.SHA256 },
    keyBits: 2048,
    exponent: 0,
    modulus: Buffer.alloc(0),
  };
  return rsa;
}
