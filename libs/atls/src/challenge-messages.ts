import type { AttestationChallenge, AttestationHello, AttestedRequest, SealedResponse } from '@constellation/proto';

/** The node's side of any challenge stream (IssueJoinTicketRequest, IssueRejoinTicketRequest, ...). */
export interface ChallengeClientMessage {
  step?: { $case: 'hello'; value: AttestationHello } | { $case: 'attested'; value: AttestedRequest } | undefined;
}

/** The service's side of any challenge stream. */
export interface ChallengeServerMessage {
  step?: { $case: 'challenge'; value: AttestationChallenge } | { $case: 'sealed'; value: SealedResponse } | undefined;
}

/** Version of the challenge protocol this code speaks. */
export const CHALLENGE_PROTOCOL_VERSION = 1;
