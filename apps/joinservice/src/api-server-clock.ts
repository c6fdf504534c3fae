import { ApiException } from '@kubernetes/client-node';
import { Refusal } from '@constellation/errors';

export interface ApiServerClockOptions {
  /** How far this machine's clock may be from the API server's before time-based writes are refused. */
  maxSkewMs: number;
  /** When a refused caller should come back (another replica may answer, or time sync may catch up). */
  retryAfterMs: number;
  /** This machine's clock (tests move it). */
  now?: () => number;
}

/**
 * This machine's clock, checked against the API server's. Replicas decide with their own clocks
 * whether the control-plane join lease expired; a replica whose clock is off decides differently
 * from its peers (takes over a lease still held, or writes a renewal its peers read as long past). Every API answer carries the server's Date header: a write whose
 * answer shows this clock off by more than the allowance is refused and undone by its caller.
 */
export class ApiServerClock {
  private readonly options: ApiServerClockOptions;
  readonly now: () => number;
  /** When (by this clock) an answer last showed the clocks within the allowance. */
  private agreedAt: number | undefined;

  constructor(options: ApiServerClockOptions) {
    this.options = options;
    this.now = options.now ?? Date.now;
  }

  /**
   * What is wrong with this clock, judged by an answer's Date header (whole seconds, stamped
   * between `sentAt` and now by a clock that agrees with ours), or undefined when it is within the
   * allowance. An answer without a Date header cannot be judged and passes.
   */
  skew(headers: Record<string, string> | undefined, sentAt: number): string | undefined {
    const receivedAt = this.now();
    const value = headers?.['date'];
    const serverDate = value === undefined ? Number.NaN : Date.parse(value);
    if (Number.isNaN(serverDate)) return undefined;
    const allowed = this.options.maxSkewMs;
    const behind = serverDate - receivedAt;
    const ahead = sentAt - (serverDate + 1_000);
    if (behind <= allowed && ahead <= allowed) {
      this.agreedAt = receivedAt;
      return undefined;
    }
    this.agreedAt = undefined;
    const seconds = (ms: number): string => `${Math.floor(ms / 1_000)} s`;
    const [by, relation] = behind > allowed ? [behind, 'behind'] : [ahead, 'ahead of'];
    return (
      `this JoinService's clock is at least ${seconds(by)} ${relation} the Kubernetes API server's ` +
      `(allowed: ${seconds(allowed)}): it would disagree with its peers about when the ` +
      `control-plane join lease expires; fix the machine's time synchronisation`
    );
  }

  /**
   * Whether an answer showed the clocks within the allowance in the last `withinMs`, with none
   * showing them apart since: time-based writes may then go ahead before their own answer is
   * judged (a clock does not drift seconds in seconds; only a step would slip through).
   */
  agreedRecently(withinMs: number): boolean {
    return this.agreedAt !== undefined && this.now() - this.agreedAt <= withinMs;
  }

  /** The refusal for a skewed clock; `undone` says what of the caller's write could not be taken back. */
  refusal(skew: string, undone = ''): Refusal {
    return new Refusal('unavailable', 'clock-skew', `${skew}${undone}`, { retryAfterMs: this.options.retryAfterMs });
  }
}

/** The headers of a refused API call's answer, if it got one. */
export function refusedAnswerHeaders(err: unknown): Record<string, string> | undefined {
  return err instanceof ApiException ? err.headers : undefined;
}
