/**
 * How many handshake attestations (one TPM quote each) strangers can have in flight: at most
 * `maxConcurrent` in the process and `perPeer` per remote address. Beyond that a ClientHello is
 * refused at once, before any key generation or TPM work; a TLS alert cannot carry a retry hint,
 * so clients see a failed connection and back off.
 */
export class AttestationLimits {
  private readonly maxConcurrent: number;
  private readonly perPeer: number;
  private inFlight = 0;
  private readonly byPeer = new Map<string, number>();

  constructor(options: { maxConcurrent?: number; perPeer?: number } = {}) {
    this.maxConcurrent = options.maxConcurrent ?? 16;
    this.perPeer = options.perPeer ?? 2;
  }

  /** Takes a slot for `peer`, or returns why not. */
  take(peer: string): string | undefined {
    if (this.inFlight >= this.maxConcurrent) return `${this.inFlight} attestations are in flight; try again shortly`;
    const mine = this.byPeer.get(peer) ?? 0;
    if (mine >= this.perPeer) return `${peer} already has ${mine} attestations in flight`;
    this.inFlight++;
    this.byPeer.set(peer, mine + 1);
    return undefined;
  }

  /** Whether a new connection from `peer` would be refused anyway: then it is cut before any TLS work. */
  saturated(peer: string): boolean {
    return this.inFlight >= this.maxConcurrent || (this.byPeer.get(peer) ?? 0) >= this.perPeer;
  }

  release(peer: string): void {
    this.inFlight--;
    const left = (this.byPeer.get(peer) ?? 1) - 1;
    if (left <= 0) this.byPeer.delete(peer);
    else this.byPeer.set(peer, left);
  }
}

/** Shared by every attested server in the process: they all attest with the same TPM. */
export const processAttestationLimits = new AttestationLimits();
