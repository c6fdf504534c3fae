import type * as grpc from '@grpc/grpc-js';
import type { IssueJoinTicketRequest, IssueJoinTicketResponse, JoinServiceClient } from '@constellation/proto';

export type JoinStream = grpc.ClientDuplexStream<IssueJoinTicketRequest, IssueJoinTicketResponse>;
export type JoinHello = Extract<NonNullable<IssueJoinTicketRequest['step']>, { $case: 'hello' }>;

/** A join call that sends a hello and never answers the challenge: a stranger's, or a replay. */
export interface SilentCall {
  stream: JoinStream;
  /** Settles with the first thing the service says: a challenge, or the call's error. */
  first: Promise<'challenge' | grpc.ServiceError>;
  /** Settles when the call ends (with its error: the service ends such calls with one). */
  error: Promise<grpc.ServiceError>;
}

export function silentCall(client: JoinServiceClient, hello: JoinHello): SilentCall {
  const stream: JoinStream = client.issueJoinTicket({ deadline: Date.now() + 30_000 });
  const error = new Promise<grpc.ServiceError>((resolve) => stream.on('error', resolve));
  const first = Promise.race([
    new Promise<'challenge'>((resolve) =>
      stream.once('data', () => {
        resolve('challenge');
      }),
    ),
    error,
  ]);
  stream.write({ step: hello });
  return { stream, first, error };
}
