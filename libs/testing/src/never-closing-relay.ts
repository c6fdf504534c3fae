import { createServer, connect } from 'node:net';
import type { Socket } from 'node:net';

export interface NeverClosingRelay {
  /** Where clients connect instead of the server. */
  port: number;
  /** Destroys every relayed connection and stops listening. */
  close: () => void;
}

/**
 * A stranger's TCP stack in front of `serverPort`: it relays bytes both ways but never answers
 * the server's FIN (half-open sockets, nothing on 'end' or 'close'), as a peer that keeps its end
 * of a connection open does. Clients connect to `port` with any ordinary TLS or HTTP/2 client.
 */
export async function startNeverClosingRelay(serverPort: number): Promise<NeverClosingRelay> {
  const upstream: Socket[] = [];
  const relay = createServer({ allowHalfOpen: true }, (inbound) => {
    const out = connect({ port: serverPort, host: '127.0.0.1', allowHalfOpen: true });
    upstream.push(out);
    out.on('error', () => undefined);
    inbound.on('error', () => undefined);
    inbound.on('data', (data: Buffer) => out.write(data));
    out.on('data', (data: Buffer) => {
      if (!inbound.destroyed) inbound.write(data);
    });
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  const address = relay.address();
  return {
    port: typeof address === 'object' && address !== null ? address.port : 0,
    close: () => {
      for (const socket of upstream) socket.destroy();
      relay.close();
    },
  };
}
