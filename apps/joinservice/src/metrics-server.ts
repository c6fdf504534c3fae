import { createServer } from 'node:http';
import type { Socket } from 'node:net';
import { EstablishedConnections } from '@constellation/atls';
import type { JoinMetrics } from './metrics.js';

export interface MetricsServer {
  port: number;
  close(): Promise<void>;
}

/**
 * Connections kept per remote address and in all (Prometheus and a probe need one or two), and how
 * long a request's headers and whole request may take. Node keeps any number, a slow request's
 * for a minute: a stranger's connections held the process's memory and descriptors (red-team
 * finding, connection-flood-attack.test.ts). Beyond the bound a connection is closed at accept.
 */
const METRICS_CONNECTIONS = { perAddress: 8, total: 64 };
const REQUEST_TIMEOUT_MS = 10_000;

/** Plain HTTP for Prometheus (`/metrics`) and liveness (`/healthz`); nothing else. */
export async function startMetricsServer(metrics: JoinMetrics, host: string, port: number): Promise<MetricsServer> {
  const http = createServer((req, res) => {
    if (req.url === '/metrics') {
      metrics.registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
        (err: unknown) => res.writeHead(500).end(String(err)),
      );
    } else if (req.url === '/healthz') {
      res.writeHead(200).end('ok');
    } else {
      res.writeHead(404).end();
    }
  });
  http.headersTimeout = REQUEST_TIMEOUT_MS;
  http.requestTimeout = REQUEST_TIMEOUT_MS;
  const kept = new EstablishedConnections(METRICS_CONNECTIONS);
  http.on('connection', (socket: Socket) => {
    if (!kept.admit(socket)) socket.destroy();
  });
  await new Promise<void>((resolve) => http.listen(port, host, resolve));
  const address = http.address();
  return {
    port: typeof address === 'object' && address !== null ? address.port : port,
    close: async () => {
      http.closeAllConnections();
      await new Promise<void>((resolve) =>
        http.close(() => {
          resolve();
        }),
      );
    },
  };
}
