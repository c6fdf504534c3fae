import { createServer } from 'node:net';

/** A free TCP port on loopback (programs that must be told their port). */
export function freeLoopbackPort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, host, () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => {
        resolve(port);
      });
    });
  });
}

/** Two adjacent free ports (swtpm's data and control channel). */
export async function freeLoopbackPortPair(host = '127.0.0.1'): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const port = await freeLoopbackPort(host);
    const next = await new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once('error', () => {
        resolve(false);
      });
      server.listen(port + 1, host, () =>
        server.close(() => {
          resolve(true);
        }),
      );
    });
    if (next && port < 65535) return port;
  }
  throw new Error('no two adjacent free ports on 127.0.0.1');
}
