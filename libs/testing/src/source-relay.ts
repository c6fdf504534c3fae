import { connect, createServer } from 'node:net';
import type { Socket } from 'node:net';

export interface SourceRelay {
  /** Where clients connect instead of the server. */
  port: number;
  /** Destroys every relayed connection and stops listening. */
  close: () => Promise<void>;
}

/**
 * A client's own network source on one machine: connections to `port` reach the server at
 * `127.0.0.1:serverPort` from `sourceAddress`, another loopback address (Linux routes all of
 * 127.0.0.0/8 to lo), so per-source rules see a second machine. Bytes pass unchanged both ways.
 */
export async function startSourceRelay(serverPort: number, sourceAddress: string): Promise<SourceRelay> {
  const sockets = new Set<Socket>();
  const track = (socket: Socket): void => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.once('close', () => sockets.delete(socket));
  };
  const relay = createServer((inbound) => {
    const out = connect({ port: serverPort, host: '127.0.0.1', localAddress: sourceAddress });
    track(inbound);
    track(out);
    inbound.pipe(out);
    out.pipe(inbound);
    inbound.once('close', () => out.destroy());
    out.once('close', () => inbound.destroy());
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  const address = relay.address();
  return {
    port: typeof address === 'object' && address !== null ? address.port : 0,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => {
        relay.close(() => {
          resolve();
        });
      });
    },
  };
}
