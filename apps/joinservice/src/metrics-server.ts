import { createServer } from 'node:http';
import type { JoinMetrics } from './metrics.js';

export interface MetricsServer {
  port: number;
  close(): Promise<void>;
}

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
