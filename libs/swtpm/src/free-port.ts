import { createServer } from 'node:net';

/**
 * A TCP port on 127.0.0.1 that was free a moment ago. Prefer binding servers to port 0
 * directly; this exists for external programs (swtpm, mini's daemons) that must be told a port. Callers retry
 * when the port was taken in between.
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
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

/** Whether `port` on `host` can be bound right now. */
export async function isPortFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => {
      resolve(false);
    });
    server.listen(port, host, () => {
      server.close(() => {
        resolve(true);
      });
    });
  });
}

/** Two adjacent free ports (p, p+1): swtpm's TCTI in tpm2-tools expects control = data + 1. */
export async function freePortPair(host = '127.0.0.1', attempts = 50): Promise<number> {
  for (let i = 0; i < attempts; i++) {
    const port = await freePort(host);
    if (port < 65535 && (await isPortFree(port + 1, host))) return port;
  }
  throw new Error(`no two adjacent free TCP ports on ${host} after ${attempts} attempts`);
}
