import type { BootstrapToken } from '@constellation/kubeadm';

/**
 * The bootstrap token each attested machine was last given, so a node that asks again (its join
 * failed before kubeadm used the token, say) gets the same still-valid token instead of a new
 * Secret each time. Kept in memory per service replica: with N replicas a node holds at most N
 * live tokens. A token is reused only while it has at least `minRemainingMs` left, enough for a
 * kubeadm join.
 */
export class NodeTokens {
  private readonly tokens = new Map<string, BootstrapToken>();
  private readonly minRemainingMs: number;
  private readonly maxMachines: number;

  constructor(minRemainingMs: number, maxMachines = 100_000) {
    this.minRemainingMs = minRemainingMs;
    this.maxMachines = maxMachines;
  }

  /** The machine's token if it is still valid long enough, else undefined. */
  reusable(machine: string, now = Date.now()): BootstrapToken | undefined {
    const token = this.tokens.get(machine);
    if (token === undefined) return undefined;
    if (token.expires.getTime() - now >= this.minRemainingMs) return token;
    this.tokens.delete(machine);
    return undefined;
  }

  remember(machine: string, token: BootstrapToken, now = Date.now()): void {
    this.tokens.delete(machine);
    this.tokens.set(machine, token);
    if (this.tokens.size <= this.maxMachines) return;
    for (const [other, t] of this.tokens) {
      if (this.tokens.size <= this.maxMachines) break;
      if (t.expires.getTime() <= now || other !== machine) this.tokens.delete(other);
    }
  }
}
