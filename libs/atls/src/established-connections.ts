import type { Socket } from 'node:net';

/** Most established connections kept at once: from one remote address, and in all. */
export interface EstablishedLimit {
  perAddress: number;
  total: number;
}

/**
 * The established connections a server keeps, counted per remote address and in all, each until
 * its socket closes. A stranger's connections are otherwise bounded by nothing but memory and
 * descriptors (red-team findings on the InitServer and the JoinService's ports).
 */
export class EstablishedConnections {
  private readonly byAddress = new Map<string, number>();
  private open = 0;

  constructor(private readonly limit: EstablishedLimit) {}

  /** Whether one more connection from `address` would be beyond the limit. */
  full(address: string): boolean {
    return (this.byAddress.get(address) ?? 0) >= this.limit.perAddress || this.open >= this.limit.total;
  }

  /** Counts `socket` until it closes; false (nothing counted) when it is one too many. */
  admit(socket: Socket): boolean {
    const address = socket.remoteAddress ?? '';
    if (this.full(address)) return false;
    this.byAddress.set(address, (this.byAddress.get(address) ?? 0) + 1);
    this.open++;
    socket.once('close', () => {
      this.open--;
      const left = (this.byAddress.get(address) ?? 1) - 1;
      if (left > 0) this.byAddress.set(address, left);
      else this.byAddress.delete(address);
    });
    return true;
  }
}
