import type { AttestationChallenge, AttestationHello, AttestedRequest, SealedResponse } from '@constellation/proto';

/** The node's side of any challenge stream (IssueJoinTicketRequest, IssueRejoinTicketRequest, ...). */
export interface ChallengeClientMessage {
  step?: { $case: 'hello'; value: AttestationHello } | { $case: 'attested'; value: AttestedRequest } | undefined;
}

/** The service's side of any challenge stream. */
export interface ChallengeServerMessage {
  step?: { $case: 'challenge'; value: AttestationChallenge } | { $case: 'sealed'; value: SealedResponse } | undefined;
}

/**
 * Version of the challenge protocol this code speaks. 2: activation proofs carry a label per
 * protocol (join, host), so a node or service of version 1 would fail activation without saying
 * why; the version tells them at the hello.
 */
export const CHALLENGE_PROTOCOL_VERSION = 2;
