import { request as httpRequest } from 'node:http';
import type { Agent, IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';

/** An HTTP answer: its status and its body as text. */
export interface HttpAnswer {
  status: number;
  body: string;
}

export interface HttpGetOptions {
  headers?: Record<string, string>;
  /** Bound on the whole exchange, connection to last byte: a peer trickling bytes is cut off too. */
  timeoutMs: number;
  /** Bound on the body; a larger answer is an error. 1 MiB by default. */
  maxBytes?: number;
  /** Connection pool (e.g. kept alive); Node's global agent by default. */
  agent?: Agent;
}

/**
 * GET `url` with node:http(s) rather than fetch(): fetch's implementation (undici) costs a start
 * time and memory on first use and more CPU per call, which shows on the bootstrapper's start
 * and on the JoinService's per-join registry lookup (measured). Redirects are not followed.
 */
export function httpGetText(url: string | URL, options: HttpGetOptions): Promise<HttpAnswer> {
  const target = typeof url === 'string' ? new URL(url) : url;
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  const maxBytes = options.maxBytes ?? 1024 * 1024;
  return new Promise<HttpAnswer>((resolve, reject) => {
    // Settles once: after an oversized body, the stream may still report its end and its error.
    let settled = false;
    const fail = (err: Error): void => {
      if (settled) return;
      settled = true;
      reject(err);
    };
    const signal = AbortSignal.timeout(options.timeoutMs);
    const request = send(
      target,
      {
        method: 'GET',
        headers: options.headers ?? {},
        signal,
        ...(options.agent === undefined ? {} : { agent: options.agent }),
      },
      (response: IncomingMessage) => {
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > maxBytes) {
            fail(new Error(`answer larger than ${maxBytes} bytes`));
            request.destroy();
            return;
          }
          chunks.push(chunk);
        });
        response.on('error', fail);
        response.once('end', () => {
          if (settled) return;
          settled = true;
          resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
        });
      },
    );
    request.on('error', (err: Error) => {
      fail(signal.aborted ? new Error(`no answer within ${options.timeoutMs} ms`, { cause: err }) : err);
    });
    request.end();
  });
}
