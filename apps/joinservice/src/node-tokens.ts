import { createHmac, hkdfSync } from 'node:crypto';
import type { CoreV1Api } from '@kubernetes/client-node';
import { Refusal } from '@constellation/errors';
import { apiErrorMessage, apiStatusCode, bootstrapTokenSecret, bootstrapTokenSecretName } from '@constellation/kubeadm';
import type { BootstrapToken } from '@constellation/kubeadm';
import type { MasterSecret } from '@constellation/keys';
import { refusedAnswerHeaders } from './api-server-clock.js';
import type { ApiServerClock } from './api-server-clock.js';

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';
const TOKEN_CHARS = 6 + 16;
const HKDF_INFO = 'constellation/joinservice/bootstrap-token/v1';
/** How long an answer that showed this clock right lets a revoke go ahead of the create's answer. */
const AGREEMENT_TRUSTED_MS = 10_000;

export interface NodeTokensOptions {
  core: CoreV1Api;
  masterSecret: MasterSecret;
  /** Bootstrap tokens live this long from the start of their period. */
  ttlMs: number;
  /** A token handed out has at least this much of its life left (enough for one kubeadm join). */
  minRemainingMs: number;
  retryAfterMs: number;
  /** This machine's clock, checked against the API server's on every create. */
  clock: ApiServerClock;
}

export interface NodeToken {
  token: BootstrapToken;
  /** The Secret existed already: minted for this machine earlier, by this process, an earlier one or a peer. */
  reused: boolean;
}

/** 22 characters of [a-z0-9] from 256 bits: 36^22 < 2^114, so the modulo bias is negligible. */
function tokenCharacters(digest: Buffer): string {
  let n = BigInt(`0x${digest.toString('hex')}`);
  let out = '';
  for (let i = 0; i < TOKEN_CHARS; i++) {
    out += ALPHABET[Number(n % 36n)] ?? '';
    n /= 36n;
  }
  return out;
}

/**
 * Each machine's bootstrap token, derived rather than remembered: the token for (machine, period)
 * is HMAC(key from the master secret, machine ‖ period), so every replica, and this service after
 * a restart, hands a machine the same token within a period without reading any Secret (the
 * service may create and delete Secrets, never read them). Creating the Secret again answers 409
 * Conflict, which means "already minted": the token is reused. Periods are `ttl − minRemaining`
 * long and a token expires `ttl` after its period starts, so a token handed out has between
 * `minRemaining` and `ttl` left and never outlives its TTL. The previous period's token would live
 * `minRemaining` into the next: minting the next revokes it, so a machine holds one live token.
 *
 * Limits: token ids have 6 characters (kubeadm's format), so two machines' ids in one period
 * collide with probability 36⁻⁶ per pair; the second machine then gets a token whose Secret holds
 * the first one's secret, its kubeadm join fails, and it gets a fresh id in the next period.
 * Replicas whose clocks are within the clock's allowance of the API server's, and so of each other's
 * by twice that, can still disagree about the period that long around a boundary.
 */
export class NodeTokens {
  private readonly options: NodeTokensOptions;
  private readonly key: Buffer;
  private readonly periodMs: number;
  /** Machines whose token Secret for a period is known to exist: saves the API write on a repeat ask. */
  private readonly minted = new Map<string, number>();
  private readonly maxRemembered = 100_000;

  constructor(options: NodeTokensOptions) {
    if (options.minRemainingMs <= 0 || options.minRemainingMs >= options.ttlMs)
      throw new RangeError(
        `minRemainingMs must be between 0 and ttlMs (${options.ttlMs}), got ${options.minRemainingMs}`,
      );
    this.options = options;
    this.periodMs = options.ttlMs - options.minRemainingMs;
    this.key = Buffer.from(hkdfSync('sha256', options.masterSecret.key, options.masterSecret.salt, HKDF_INFO, 32));
  }

  /** The machine's token for the period `now` falls in. */
  derive(machine: string, now = this.options.clock.now()): BootstrapToken {
    const period = Math.floor(now / this.periodMs);
    const chars = tokenCharacters(createHmac('sha256', this.key).update(`${machine}\n${period}`).digest());
    const id = chars.slice(0, 6);
    const secret = chars.slice(6);
    return { id, secret, token: `${id}.${secret}`, expires: new Date(period * this.periodMs + this.options.ttlMs) };
  }

  /**
   * The machine's token, its Secret created in the API unless it exists already. The previous
   * period's token lives `minRemaining` into this period; it is revoked (its Secret deleted) next,
   * so a machine that asks in both periods never holds two live tokens. Nothing is handed out
   * unless both writes succeeded: a retry creates (409, reused) and revokes again.
   *
   * The period comes from this machine's clock, so the create's answer is checked against the
   * API server's Date header first: a replica whose clock lags would re-create a token a peer
   * revoked at the boundary, one whose clock leads would revoke the token a peer just handed
   * out. Either is refused (and what it created is taken back) before anything is revoked, unless
   * an answer within the last 10 s showed the clock right.
   */
  async tokenFor(machine: string, nodeName: string, now = this.options.clock.now()): Promise<NodeToken> {
    const token = this.derive(machine, now);
    const expiresAt = token.expires.getTime();
    if (this.minted.get(machine) === expiresAt) return { token, reused: true };
    const previous = this.derive(machine, now - this.periodMs);
    const revokes = previous.expires.getTime() > now;
    // The revoke waits for the create's answer to vouch for this clock, unless one did a moment
    // ago: under load answers come all the time, and the revoke then costs no extra round trip.
    const early =
      revokes && this.options.clock.agreedRecently(AGREEMENT_TRUSTED_MS) ? this.revoke(previous) : undefined;
    early?.catch(() => undefined); // its outcome is read below, or a retry revokes again
    const sentAt = this.options.clock.now();
    const { created, headers } = await this.createSecret(token, nodeName).catch((err: unknown) => {
      throw this.unavailable('could not create a bootstrap token', err);
    });
    const skew = this.options.clock.skew(headers, sentAt);
    if (skew !== undefined) throw this.options.clock.refusal(skew, created ? await this.takeBack(token) : '');
    if (revokes)
      await (early ?? this.revoke(previous)).catch((err: unknown) => {
        throw this.unavailable("could not revoke the node's token of the previous period", err);
      });
    this.remember(machine, expiresAt, now);
    return { token, reused: !created };
  }

  /**
   * Creates the token's Secret: `created` is false when it existed (409: minted already).
   * `headers` are the API server's answer's, on either answer.
   */
  private async createSecret(
    token: BootstrapToken,
    nodeName: string,
  ): Promise<{ created: boolean; headers: Record<string, string> | undefined }> {
    try {
      const answer = await this.options.core.createNamespacedSecretWithHttpInfo({
        namespace: 'kube-system',
        body: bootstrapTokenSecret(token, `Bootstrap token for ${nodeName}, minted by the Constellation JoinService`),
      });
      return { created: true, headers: answer.headers };
    } catch (err) {
      if (apiStatusCode(err) === 409) return { created: false, headers: refusedAnswerHeaders(err) };
      throw err;
    }
  }

  /** Deletes a token created by mistake: nothing, or what the caller should know was left behind. */
  private async takeBack(token: BootstrapToken): Promise<string> {
    try {
      await this.revoke(token);
      return '';
    } catch (err) {
      return `; the token it created could not be taken back (${apiErrorMessage(err)}) and expires ${token.expires.toISOString()}`;
    }
  }

  /** Deletes the token's Secret; one that is gone already (404) is revoked too. */
  private async revoke(token: BootstrapToken): Promise<void> {
    try {
      await this.options.core.deleteNamespacedSecret({
        namespace: 'kube-system',
        name: bootstrapTokenSecretName(token),
      });
    } catch (err) {
      if (apiStatusCode(err) !== 404) throw err;
    }
  }

  private unavailable(what: string, cause: unknown): Refusal {
    return new Refusal('unavailable', 'api-unavailable', `${what} in the cluster: ${apiErrorMessage(cause)}`, {
      retryAfterMs: this.options.retryAfterMs,
      cause,
    });
  }

  private remember(machine: string, expiresAt: number, now: number): void {
    this.minted.delete(machine);
    this.minted.set(machine, expiresAt);
    if (this.minted.size <= this.maxRemembered) return;
    for (const [other, expires] of this.minted) {
      if (this.minted.size <= this.maxRemembered) break;
      if (expires <= now || other !== machine) this.minted.delete(other);
    }
  }
}
