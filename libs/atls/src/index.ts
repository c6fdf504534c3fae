export { proveServerIdentity } from './activation-service.js';
export { AttestationLimits } from './attestation-limits.js';
export { AttestedChannelCredentials } from './attested-channel.js';

export { AttestedTlsServer } from './attested-tls-server.js';
export { challengeUserData } from './challenge-binding.js';
export type { ServiceCheck } from './challenge-client.js';
export { requestWithAttestation } from './challenge-client.js';

export type { ChallengeRejection, ChallengeServerOptions } from './challenge-server.js';
export { serveChallenge } from './challenge-server.js';
export { OutstandingChallenges } from './outstanding-challenges.js';

export { nonceToServerName } from './nonce-server-name.js';
export { atlsPublicRoot, issueFromPublicRoot } from './public-root.js';
export { ephemeralKey, open } from './seal.js';

export type { ServiceAttester } from './service-attester.js';
export { AgentAttester, issuerAttester, serveAttestationAgent } from './service-attester.js';
export { GrpcTlsFront } from './grpc-tls-front.js';
export { GrpcPlainFront } from './grpc-plain-front.js';
export { connectionPeer } from './grpc-front.js';
export type { GrpcFrontHooks } from './grpc-front.js';
export { EstablishedConnections } from './established-connections.js';
export type { EstablishedLimit } from './established-connections.js';
export {
  SERVICE_CHANNEL_OPTIONS,
  serviceChannelCredentials,
  serviceServerCredentials,
  serviceTlsIdentity,
} from './service-tls.js';
export { CHALLENGE_PROTOCOL_VERSION } from './challenge-messages.js';
export { UnansweredChallenges } from './unanswered-challenges.js';
