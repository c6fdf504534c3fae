import type * as grpc from '@grpc/grpc-js';
import { serveChallenge } from '@constellation/atls';
import type { ChallengeRejection, ChallengeServerOptions } from '@constellation/atls';
import { Refusal } from '@constellation/errors';
import { JoinTicket, JoinTicketRequest, RejoinTicket, RejoinTicketRequest } from '@constellation/proto';
import type {
  IssueJoinTicketRequest,
  IssueJoinTicketResponse,
  IssueRejoinTicketRequest,
  IssueRejoinTicketResponse,
  JoinServiceServer,
} from '@constellation/proto';
import type { Admission } from './admission.js';
import type { ConcurrencyLimit } from './concurrency-limit.js';
import type { JoinMetrics } from './metrics.js';
import type { ShedLog } from './shed-log.js';
import type { TicketService } from './ticket-service.js';

type Outcome = 'issued' | 'rejected' | 'retry' | 'error';

/** Refused by the service's own logic (admission, vetting, the ticket), counted where refused. */
const refusedByService = (reason: ChallengeRejection): boolean => reason === 'handler' || reason === 'admission';

/** Counts a refusal by the ticket logic under its reason, and says what kind of outcome it was. */
function refused(metrics: JoinMetrics, kind: 'join' | 'rejoin', err: unknown): Outcome {
  if (!(err instanceof Refusal)) return 'error';
  metrics.refusals.inc({ kind, reason: err.reason });
  return err.retryable ? 'retry' : 'rejected';
}

/** The longest a join call keeps its slot if its stream never reports an end. */
const SLOT_FALLBACK_MS = 120_000;

function decode<T>(decoder: { decode(bytes: Uint8Array): T }, bytes: Uint8Array, name: string): T {
  try {
    return decoder.decode(bytes);
  } catch {
    throw new Refusal('invalid-request', 'malformed', `request is not a ${name}`);
  }
}

export interface JoinHandlerParts {
  /** The attested-channel options every call shares (validators, identity, host proof, limits, logger). */
  challenge: Omit<ChallengeServerOptions, 'handle' | 'onRejected' | 'vetIdentity'>;
  admission: Admission;
  tickets: TicketService;
  limit: ConcurrencyLimit;
  metrics: JoinMetrics;
  /** Says in the log what the limit sheds (one line per episode and per summary period). */
  shedLog: ShedLog;
}

/**
 * The JoinService's RPCs: each runs the attestation challenge, then hands the attested request
 * to the ticket logic. Refusals from the ticket logic become statuses in serveChallenge.
 */
export function joinHandlers(parts: JoinHandlerParts): JoinServiceServer {
  const { challenge, admission, tickets, limit, metrics, shedLog } = parts;
  const { admit } = admission;
  // The registry's word on a TPM before its challenge; a refusal is counted as the ticket logic's.
  const vetIdentity =
    (kind: 'join' | 'rejoin') =>
    async (ekPublicKeyHash: string): Promise<void> => {
      try {
        await admission.vet(ekPublicKeyHash);
      } catch (err) {
        metrics.joins.inc({ kind, role: 'unknown', outcome: refused(metrics, kind, err) });
        throw err;
      }
    };
  const countRejected = (kind: 'join' | 'rejoin', reason: ChallengeRejection): void => {
    if (reason === 'outstanding') metrics.refusals.inc({ kind, reason: 'challenge-outstanding' });
    else if (reason === 'call-in-progress') metrics.refusals.inc({ kind, reason: 'tpm-call-in-progress' });
    else if (reason === 'unanswered') metrics.refusals.inc({ kind, reason: 'unanswered-challenges' });
    else if (!refusedByService(reason)) metrics.attestationFailures.inc({ reason });
  };
  /**
   * Shed load before the expensive part, but only for calls that sent a well-formed hello: the
   * attestation (EK path, credential, quote) and the ticket run only for calls that got a slot,
   * so under a storm every admitted call stays fast; a few more wait in line for a slot, and the
   * rest come back after retry-after-ms; a stranger's silent streams take no slot and no place in
   * line (red-team finding). Rejoins share the slots: without them every stranger's rejoin hello
   * had its EK certificate checked at once, however many came (red-team finding).
   *
   * Two phases, each with a slot of its own: the hello's (preparing the challenge) and the
   * answer's (checking it, the ticket), ahead of the line. Waiting for the node's answer holds
   * none: strangers replaying public hellos from two addresses, half the slots each, held every
   * slot for the challenge's time bound and turned genuine nodes away (issue 50).
   */
  const admitFor =
    (call: grpc.ServerDuplexStream<unknown, unknown>, kind: 'join' | 'rejoin', phase: 'hello' | 'answer') =>
    (): (() => void) | Promise<() => void> => {
      // The challenge frees the slot however the exchange ends; a handler that never settles
      // must not keep it either.
      const settle = (leave: () => void): (() => void) => {
        setTimeout(leave, SLOT_FALLBACK_MS).unref();
        return leave;
      };
      const shed = (busy: unknown): never => {
        metrics.refusals.inc({ kind, reason: 'busy' });
        shedLog.shed(busy);
        metrics.joins.inc({ kind, role: 'unknown', outcome: 'retry' });
        throw busy;
      };
      let waiting;
      if (phase === 'answer') {
        // An answered call goes ahead of the line: its node has done its part.
        const entered = limit.enterAnswered();
        if (typeof entered === 'function') return settle(entered);
        waiting = entered;
      } else {
        // A slot for preparing the challenge only (admitAnswer: none while the node answers).
        const leave = limit.tryEnter(false);
        if (leave !== undefined) return settle(leave);
        try {
          waiting = limit.enqueue(false);
        } catch (busy) {
          return shed(busy);
        }
      }
      for (const event of ['close', 'error', 'cancelled']) call.once(event, waiting.cancel);
      return waiting.admitted.then(settle, (err: unknown) => {
        if (call.cancelled) throw err; // it went away: not a refusal to count
        return shed(err);
      });
    };
  return {
    issueJoinTicket: (call: grpc.ServerDuplexStream<IssueJoinTicketRequest, IssueJoinTicketResponse>) => {
      serveChallenge(call, {
        ...challenge,
        vetIdentity: vetIdentity('join'),
        admit: admitFor(call, 'join', 'hello'),
        admitAnswer: admitFor(call, 'join', 'answer'),
        onRejected: (reason) => {
          countRejected('join', reason);
          if (reason === 'outstanding' || reason === 'unanswered')
            metrics.joins.inc({ kind: 'join', role: 'unknown', outcome: 'retry' });
          else if (!refusedByService(reason)) metrics.joins.inc({ kind: 'join', role: 'unknown', outcome: 'rejected' });
        },
        handle: async (bytes, result, proven) => {
          const request = decode(JoinTicketRequest, bytes, 'JoinTicketRequest');
          const role = request.isControlPlane ? 'control-plane' : 'worker';
          const stop = metrics.ticketLatency.startTimer({ kind: 'join' });
          try {
            const ticket = await tickets.joinTicket(request, await admit(result, proven));
            metrics.joins.inc({ kind: 'join', role, outcome: 'issued' });
            return Buffer.from(JoinTicket.encode(ticket).finish());
          } catch (err) {
            metrics.joins.inc({ kind: 'join', role, outcome: refused(metrics, 'join', err) });
            throw err;
          } finally {
            stop();
          }
        },
      });
    },
    issueRejoinTicket: (call: grpc.ServerDuplexStream<IssueRejoinTicketRequest, IssueRejoinTicketResponse>) => {
      serveChallenge(call, {
        ...challenge,
        vetIdentity: vetIdentity('rejoin'),
        admit: admitFor(call, 'rejoin', 'hello'),
        admitAnswer: admitFor(call, 'rejoin', 'answer'),
        onRejected: (reason) => {
          countRejected('rejoin', reason);
        },
        handle: async (bytes, result, proven) => {
          const request = decode(RejoinTicketRequest, bytes, 'RejoinTicketRequest');
          try {
            const ticket = await tickets.rejoinTicket(request, await admit(result, proven));
            metrics.joins.inc({ kind: 'rejoin', role: 'unknown', outcome: 'issued' });
            return Buffer.from(RejoinTicket.encode(ticket).finish());
          } catch (err) {
            metrics.joins.inc({ kind: 'rejoin', role: 'unknown', outcome: refused(metrics, 'rejoin', err) });
            throw err;
          }
        },
      });
    },
  };
}
