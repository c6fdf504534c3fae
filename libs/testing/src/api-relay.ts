import { request as httpsRequest } from 'node:https';
import { createServer } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request that passed through the relay. */
export interface RelayedRequest {
  method: string;
  path: string;
}

/**
 * An HTTPS relay in front of the real kube-apiserver, for fault tests: it records every request
 * and answers those `throttle` picks as kube-apiserver answers a request beyond its in-flight
 * limit (maxinflight.go tooManyRequests: 429, `Retry-After: 1`, a plain-text body); everything
 * else goes to the API server unchanged, with the client's bearer token. It serves with the API
 * server's own certificate (its names include 127.0.0.1), so clients keep the cluster CA.
 * Client certificates do not pass through: clients behind it authenticate with tokens.
 */
export interface ApiRelay {
  /** `https://127.0.0.1:<port>` */
  readonly url: string;
  readonly requests: RelayedRequest[];
  throttle(which: ((request: RelayedRequest) => boolean) | undefined): void;
  close(): Promise<void>;
}

export async function startApiRelay(options: {
  /** The real API server, `https://host:port`. */
  target: string;
  caPem: string;
  /** A serving certificate and key for 127.0.0.1 that chain to `caPem`. */
  tls: { cert: string; key: string };
}): Promise<ApiRelay> {
  const requests: RelayedRequest[] = [];
  let throttled: ((request: RelayedRequest) => boolean) | undefined;
  const target = new URL(options.target);
  const relay = (req: IncomingMessage, res: ServerResponse): void => {
    const recorded = { method: req.method ?? 'GET', path: new URL(req.url ?? '/', 'http://relay').pathname };
    requests.push(recorded);
    if (throttled?.(recorded) === true) {
      res
        .writeHead(429, {
          'retry-after': '1',
          'content-type': 'text/plain; charset=utf-8',
          'x-content-type-options': 'nosniff',
        })
        .end('Too many requests, please try again later.\n');
      req.resume();
      return;
    }
    const upstream = httpsRequest(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: target.host },
        ca: options.caPem,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.once('error', (error) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`relay: ${error.message}\n`);
    });
    req.pipe(upstream);
  };
  const server = createServer({ cert: options.tls.cert, key: options.tls.key }, relay);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://127.0.0.1:${port}`,
    requests,
    throttle: (which) => {
      throttled = which;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          resolve();
        });
      }),
  };
}
