import * as grpc from '@grpc/grpc-js';
import { SERVICE_CHANNEL_OPTIONS, requestWithAttestation, serviceChannelCredentials } from '@constellation/atls';
import {
  JoinServiceClient,
  JoinTicket,
  RejoinTicket,
  createClient,
  readRetryAfter,
  retryDelay,
} from '@constellation/proto';
import type { NodeContext } from './node-context.js';
import { errorMessage } from '@constellation/errors';

/** Every JoinService endpoint refused or failed; says why for each, and how long the service asked to wait. */
export class JoinServiceUnavailableError extends Error {
  override readonly name = 'JoinServiceUnavailableError';
  /** The longest `retry-after-ms` any endpoint asked for, if any did. */
  readonly retryAfterMs: number | undefined;
  /** gRPC status of the last endpoint's failure, when it was one. */
  readonly code: grpc.status | undefined;
  /** The last endpoint's own message (a refusal's reason), without address or status prefix. */
  readonly details: string | undefined;

  constructor(message: string, retryAfterMs: number | undefined, code: grpc.status | undefined, details?: string) {
    super(message);
    this.retryAfterMs = retryAfterMs;
    this.code = code;
    this.details = details;
  }
}

/**
 * The node's one client of the JoinService, for join and rejoin: finds the endpoints (the load
 * balancer, then the other control planes), dials each with service TLS, runs the attested
 * challenge (with the JoinService host check for joins), and decodes the sealed answer.
 */
export class JoinServiceConnection {
  private readonly context: NodeContext;
  private readonly requestTimeoutMs: number;
  /**
   * Connections to endpoints that refused for load, kept for the next attempt: the service is up,
   * and coming back on the same connection spares it a TLS handshake per node and retry, which in
   * a 500-node storm was a large share of its work (measured). Any other failure closes it.
   */
  private readonly warm = new Map<string, JoinServiceClient>();

  constructor(context: NodeContext, requestTimeoutMs: number) {
    this.context = context;
    this.requestTimeoutMs = requestTimeoutMs;
  }

  async join(request: Uint8Array, stopped: () => boolean = () => false): Promise<JoinTicket | undefined> {
    const answer = await this.call(
      (client) => client.issueJoinTicket({ deadline: Date.now() + this.requestTimeoutMs }),
      request,
      true,
      stopped,
    );
    return answer === undefined ? undefined : JoinTicket.decode(answer);
  }

  /**
   * A rejoin ticket that `usable` accepts (it throws the reason otherwise). A rejoin service's host
   * is not checked, so a ticket proves itself, and one that does not counts as that endpoint's
   * failure: the next endpoint is asked (red-team finding: a fake at the first endpoint answered
   * every attempt, and the genuine JoinService behind it was never asked).
   */
  async rejoin(
    request: Uint8Array,
    usable: (ticket: RejoinTicket, endpoint: string) => Promise<void>,
  ): Promise<RejoinTicket> {
    let ticket: RejoinTicket | undefined;
    const answer = await this.call(
      (client) => client.issueRejoinTicket({ deadline: Date.now() + this.requestTimeoutMs }),
      request,
      false,
      () => false,
      async (plaintext, endpoint) => {
        ticket = RejoinTicket.decode(plaintext);
        await usable(ticket, endpoint);
      },
    );
    if (answer === undefined || ticket === undefined) throw new Error('no JoinService endpoint to ask');
    return ticket;
  }

  private async endpoints(): Promise<string[]> {
    const { metadata } = this.context;
    const [self, endpoint, peers] = await Promise.all([metadata.self(), metadata.endpoint(), metadata.peers()]);
    const hosts = new Set([
      endpoint.host,
      ...peers.filter((p) => p.role === 'control-plane' && p.name !== self.name).map((p) => p.ip),
    ]);
    return [...hosts].map((host) => `${host}:${endpoint.joinServicePort}`);
  }

  private async call(
    open: (client: JoinServiceClient) => Parameters<typeof requestWithAttestation>[0],
    request: Uint8Array,
    checkService: boolean,
    stopped: () => boolean,
    /** Throws when the endpoint's answer is of no use; the next endpoint is asked. */
    usable?: (answer: Buffer, endpoint: string) => Promise<void>,
  ): Promise<Buffer | undefined> {
    const failures: string[] = [];
    let retryAfterMs: number | undefined;
    let code: grpc.status | undefined;
    let details: string | undefined;
    for (const address of await this.endpoints()) {
      if (stopped()) {
        this.closeWarm();
        return undefined;
      }
      const client =
        this.warm.get(address) ??
        createClient(JoinServiceClient, address, serviceChannelCredentials(), SERVICE_CHANNEL_OPTIONS);
      this.warm.delete(address);
      let busy = false;
      try {
        const answer = await requestWithAttestation(
          open(client),
          this.context.issuer,
          request,
          checkService ? this.context.joinServiceCheck : undefined,
        );
        await usable?.(answer, address);
        this.closeWarm();
        return answer;
      } catch (err) {
        failures.push(`${address}: ${errorMessage(err)}`);
        const asked = readRetryAfter(err);
        if (asked !== undefined) retryAfterMs = Math.max(retryAfterMs ?? 0, asked);
        code = (err as Partial<grpc.ServiceError>).code;
        details = (err as Partial<grpc.ServiceError>).details;
        busy = code === grpc.status.RESOURCE_EXHAUSTED;
      } finally {
        if (busy) this.warm.set(address, client);
        else client.close();
      }
    }
    throw new JoinServiceUnavailableError(failures.join('; '), retryAfterMs, code, details);
  }

  private closeWarm(): void {
    for (const client of this.warm.values()) client.close();
    this.warm.clear();
  }
}

/**
 * How long to wait before the next attempt: what the service asked (`retry-after-ms`, the
 * longest any endpoint asked), else backoff; the policy is @constellation/proto's retryDelay.
 */
export function nextAttemptDelay(
  attempt: number,
  err: unknown,
  initialMs: number,
  maxMs: number,
  random: () => number = Math.random,
): number {
  const asked = err instanceof JoinServiceUnavailableError ? err.retryAfterMs : readRetryAfter(err);
  return retryDelay(attempt, asked, initialMs, maxMs, random);
}
