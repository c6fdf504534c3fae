import { connect } from 'node:net';
import type { NetConnectOpts } from 'node:net';

/**
 * Whether something accepts connections at `address` now: a refused, unreachable or silent
 * address (no answer within `timeoutMs`, as from an address whose network is not up yet) is false.
 */
export function canConnect(address: NetConnectOpts, timeoutMs = 1_000): Promise<boolean> {
  return new Promise((resolveConnect) => {
    const socket = connect(address);
    const settle = (accepted: boolean): void => {
      socket.destroy();
      resolveConnect(accepted);
    };
    socket.setTimeout(timeoutMs, () => {
      settle(false);
    });
    socket.once('connect', () => {
      settle(true);
    });
    socket.once('error', () => {
      settle(false);
    });
  });
}
