export { caPublicKeyPin } from './ca-pin.js';
export type { IssuedKubeletCertificate } from './certificate-authority.js';
export { CertificateAuthority } from './certificate-authority.js';

export { CsrError } from './kubelet-csr-checks.js';
export { deriveClusterId, deriveMeasurementSecret, deriveStateDiskKey, markedPcr15 } from './key-hierarchy.js';
export { deriveDiskReceipt, isDiskReceipt } from './disk-receipt.js';

export { createKubeletCsr } from './kubelet-csr.js';
export type { MasterSecret } from './master-secret.js';
export { generateMasterSecret, masterSecretFromJson, masterSecretToJson } from './master-secret.js';

export { hashInitSecret, verifyInitSecret } from './init-secret.js';
export { SHARED_CONTROL_PLANE_PKI_FILES } from './shared-control-plane-pki.js';
export { ipFromBytes, ipToBytes } from './ip-address.js';
