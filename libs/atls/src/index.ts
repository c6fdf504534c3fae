export { ActivationBudget, addActivationService, proveServerIdentity } from './activation-service.js';
export { AttestationLimits, processAttestationLimits } from './attestation-limits.js';
export { AttestedChannelCredentials, attestationFailure } from './attested-channel.js';
export type { AttestedTlsServerOptions } from './attested-tls-server.js';
export { AttestedTlsServer } from './attested-tls-server.js';
export { challengeUserData } from './challenge-binding.js';
export type { ServiceCheck } from './challenge-client.js';
export { ServiceAttestationError, requestWithAttestation } from './challenge-client.js';
export type { ChallengeClientMessage, ChallengeServerMessage } from './challenge-messages.js';
export { CHALLENGE_PROTOCOL_VERSION } from './challenge-messages.js';
export type { ChallengeRejection, ChallengeServerOptions } from './challenge-server.js';
export { serveChallenge } from './challenge-server.js';
export type { CertificateExtension, CertificateFields, CertificateSpec } from './certificate.js';
export { certificateToPem, createCertificate, readCertificateFields } from './certificate.js';
export { AtlsError } from './errors.js';
export { NONCE_BYTES, nonceToServerName, serverNameToNonce } from './nonce-server-name.js';
export { ATLS_ROOT_NAME, atlsPublicRoot, issueFromPublicRoot } from './public-root.js';
export { ephemeralKey, open, seal } from './seal.js';
export { spkiUserData } from './spki-binding.js';
export type { ServiceAttester } from './service-attester.js';
export {
  AgentAttester,
  ServiceAttesterBusyError,
  issuerAttester,
  serveAttestationAgent,
  serviceUserData,
} from './service-attester.js';
export { SERVICE_CHANNEL_OPTIONS, serviceChannelCredentials, serviceServerCredentials } from './service-tls.js';
