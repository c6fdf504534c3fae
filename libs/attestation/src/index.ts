export { activationProof, checkActivationProof } from './activation-proof.js';
export { checkAttestationKey } from './attestation-key.js';
export type { AttestationPolicy, AttestationVerifier } from './attestation-policy.js';
export { createAttestationVerifier } from './attestation-policy.js';
export { quoteExtraData } from './binding.js';
export { MAX_DOCUMENT_BYTES, decodeDocument, encodeDocument } from './document.js';
export type { EkTpmIdentity, VerifiedEkCertificate, VerifyEkCertificateOptions } from './ek-certificate.js';
export {
  MAX_EK_CERTIFICATE_BYTES,
  MAX_EK_INTERMEDIATES,
  MAX_EK_INTERMEDIATE_CANDIDATES,
  pemCertificatesToDer,
  verifyEkCertificate,
} from './ek-certificate.js';
export { checkEkPublic, ekPublicKeyHash } from './ek-public.js';
export type { AttestationFailureReason, PcrMismatch } from './errors.js';
export { AttestationConfigError, AttestationError } from './errors.js';
export type { EkIdentityPolicy, PendingActivation, VerifiedTpmIdentity } from './ek-identity.js';
export { EkIdentityVerifier } from './ek-identity.js';
export type { Issuer, RootedIdentity } from './issuer.js';
export type { KdfHash } from './kdf.js';
export { kdfa, kdfe } from './kdf.js';
export type { Credential } from './make-credential.js';
export { MAX_CREDENTIAL_SECRET_BYTES, makeCredential } from './make-credential.js';
export type { BootComponent } from './measured-boot.js';
export { componentDigest, expectedMeasurements, initialPcrValue, measureBoot, replayEvents } from './measured-boot.js';
export type { Measurement, Measurements } from './measurements.js';
export { checkMeasurementPolicy, measurementsToFile, parseMeasurements } from './measurements.js';
export { readPemCertificates } from './pem-file.js';
export type { TpmIssuerOptions } from './tpm-issuer.js';
export { TpmIssuer } from './tpm-issuer.js';
export type { TpmValidatorOptions } from './tpm-validator.js';
export { TpmValidator } from './tpm-validator.js';
export type { ValidationResult, Validator } from './validator.js';
export type { Variant, VariantName } from './variant.js';
export { VARIANTS, unrootedVariantWarning, variantByName, variantByOid } from './variant.js';
