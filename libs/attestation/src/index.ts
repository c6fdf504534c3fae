export { activationLabel, activationProof } from './activation-proof.js';
export type { ActivationProtocol } from './activation-proof.js';

export type { AttestationPolicy, AttestationVerifier } from './attestation-policy.js';
export { createAttestationVerifier } from './attestation-policy.js';
export { quoteExtraData } from './binding.js';
export { MAX_DOCUMENT_BYTES } from './document.js';

export { pemCertificatesToDer } from './pem.js';
export { ekPublicKeyHash } from './ek-public.js';

export { AttestationError } from './errors.js';
export type { PendingActivation, VerifiedTpmIdentity } from './ek-identity.js';
export { EkIdentityVerifier } from './ek-identity.js';
export type { Issuer, RootedIdentity } from './issuer.js';

export { kdfa } from './kdf.js';
export { attestationKeyMachineId, machineIdOf } from './machine-id.js';
export type { Credential } from './make-credential.js';
export { makeCredential } from './make-credential.js';
export type { BootComponent, MeasureBootOptions } from './measured-boot.js';
export {
  bootComponentEvent,
  bootEventPolicy,
  componentDigest,
  expectedMeasurements,
  measureBoot,
} from './measured-boot.js';
export {
  MAX_EVENT_LOG_BYTES,
  MAX_EVENT_LOG_EVENTS,
  eventLogPolicyViolations,
  eventSummary,
} from './event-log-check.js';
export type { AttestationFile } from './measurements.js';
export type { Measurements } from './measurements.js';
export {
  attestationFileToJson,
  checkMeasurementPolicy,
  measurementsToFile,
  parseAttestationFile,
  parseMeasurements,
} from './measurements.js';
export { readPemCertificates } from './pem-file.js';

export { TpmIssuer } from './tpm-issuer.js';

export { TpmValidator } from './tpm-validator.js';
export type { ValidationResult, Validator } from './validator.js';

export { unrootedVariantWarning, variantByName } from './variant.js';
export type { EventPolicy } from '@constellation/eventlog';
export {
  MEASUREMENTS_SIGNATURE_ALGORITHM,
  createMeasurementsSigningKey,
  signMeasurements,
  verifySignedMeasurements,
} from './signed-measurements.js';
