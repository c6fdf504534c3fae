export { caPublicKeyPin, isCaPin } from './ca-pin.js';
export type { CertificateRequestSpec, IssuedKubeletCertificate } from './certificate-authority.js';
export { CertificateAuthority } from './certificate-authority.js';
export type { KubeletCertificateProfile, RegisteredNodeIdentity } from './kubelet-csr-checks.js';
export { CsrError } from './kubelet-csr-checks.js';
export {
  deriveClusterId,
  deriveDataKey,
  deriveMeasurementSecret,
  deriveStateDiskKey,
  markedPcr15,
} from './key-hierarchy.js';
export type { KubeletCsr } from './kubelet-csr.js';
export { createKubeletCsr } from './kubelet-csr.js';
export type { MasterSecret } from './master-secret.js';
export {
  MASTER_KEY_BYTES,
  MASTER_SALT_BYTES,
  checkMasterSecret,
  generateMasterSecret,
  masterSecretFromJson,
  masterSecretToJson,
} from './master-secret.js';
export type { ScryptCost } from './init-secret.js';
export { DEFAULT_SCRYPT_COST, hashInitSecret, verifyInitSecret } from './init-secret.js';
export { SHARED_CONTROL_PLANE_PKI_FILES } from './shared-control-plane-pki.js';
