import { get as httpGet } from 'node:http';
import { get as httpsGet } from 'node:https';
import type { IncomingMessage } from 'node:http';

/** An HTTP answer: its status and its body as text. */
export interface HttpAnswer {
  status: number;
  body: string;
}

/**
 * GET with node:http(s) rather than fetch(): Node loads fetch's implementation (undici) on first
 * use, which costs every bootstrapper start time and memory for a few metadata calls. Bounded by
 * `timeoutMs` for the whole exchange, and by `maxBytes` for the body.
 */
export function httpGetText(
  url: string,
  headers: Record<string, string>,
  timeoutMs: number,
  maxBytes = 1024 * 1024,
): Promise<HttpAnswer> {
  const get = new URL(url).protocol === 'https:' ? httpsGet : httpGet;
  return new Promise<HttpAnswer>((resolve, reject) => {
    const request = get(url, { headers, signal: AbortSignal.timeout(timeoutMs) }, (response: IncomingMessage) => {
      const chunks: Buffer[] = [];
      let size = 0;
      response.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBytes) {
          request.destroy(new Error(`answer larger than ${maxBytes} bytes`));
          return;
        }
        chunks.push(chunk);
      });
      response.once('error', reject);
      response.once('end', () => {
        resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
      });
    });
    request.once('error', reject);
  });
}
