// Curated public surface of the generated protocol code. Generated files live in src/gen and
// are regenerated with `npm run generate`; never edit them by hand.

export {
  ActivateRequest,
  ActivateResponse,
  ActivationServiceClient,
  ActivationServiceService,
  AttestationAgentServiceClient,
  AttestationAgentServiceService,
  AttestationChallenge,
  AttestationHello,
  AttestRequest,
  AttestResponse,
  AttestedRequest,
  Credential,
  SealedResponse,
} from './gen/constellation/atls/v1/challenge.js';

export {
  InitFailure,
  InitRequest,
  InitResponse,
  InitServiceClient,
  InitServiceService,
  InitStep,
  InitSuccess,
  StepState,
} from './gen/constellation/init/v1/init.js';
export type { InitServiceServer } from './gen/constellation/init/v1/init.js';
export {
  ControlPlaneFile,
  IssueJoinTicketRequest,
  IssueJoinTicketResponse,
  IssueRejoinTicketRequest,
  IssueRejoinTicketResponse,
  JoinServiceClient,
  JoinServiceService,
  JoinTicket,
  JoinTicketRequest,
  RejoinTicket,
  RejoinTicketRequest,
} from './gen/constellation/join/v1/join.js';
export type { JoinServiceServer } from './gen/constellation/join/v1/join.js';
export {
  DescribeRequest,
  DescribeResponse,
  RecoverRequest,
  RecoverResponse,
  RecoveryServiceClient,
  RecoveryServiceService,
} from './gen/constellation/recovery/v1/recovery.js';
export type { RecoveryServiceServer } from './gen/constellation/recovery/v1/recovery.js';
export {
  AttestationDocument,
  MeasuredEvent,
  TpmIdentity,
  TpmQuote,
} from './gen/constellation/attestation/v1/attestation.js';
export { HealthCheckResponse_ServingStatus, HealthClient } from './gen/grpc/health/v1/health.js';

export { grpcMessageLimits } from './message-limits.js';
export { INIT_CALL_DEADLINE_MS, createClient, createGrpcServer } from './grpc-factory.js';

export { HealthStatus } from './health-service.js';
export { StatusError, retryAfterMetadata, statusErrorOf } from './status-error.js';
export { backoffDelay, readRetryAfter, retryDelay } from './retry-after.js';
