import { request as httpRequest } from 'node:http';
import type { IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';

/** An error retrying cannot fix (a refused redirect, an oversized body, a wrong digest). */
export class PermanentFetchError extends Error {
  override readonly name = 'PermanentFetchError';
}

/** A non-2xx answer; retried, since mirrors and API servers answer 503 while they start. */
export class HttpStatusError extends Error {
  override readonly name = 'HttpStatusError';
}

export interface HttpGetOptions {
  signal: AbortSignal;
  /** PEM CA certificates that alone are trusted for https (pinning the cluster CA). */
  ca?: string;
  maxRedirects?: number;
}

/**
 * GETs `url` and returns the response once its status is 2xx. Redirects are followed only to the
 * same origin (scheme, host and port): a mirror cannot send the node to another host. The body is
 * left for the caller to stream with its own bound.
 */
export async function httpGet(url: string, options: HttpGetOptions): Promise<IncomingMessage> {
  const origin = new URL(url).origin;
  let current = new URL(url);
  for (let redirects = 0; ; redirects++) {
    if (current.protocol !== 'http:' && current.protocol !== 'https:')
      throw new PermanentFetchError(`unsupported URL scheme ${current.protocol} (expected http(s))`);
    const response = await getOnce(current, options);
    const status = response.statusCode ?? 0;
    if (status >= 200 && status < 300) return response;
    response.resume();
    const location = response.headers.location;
    if (status >= 300 && status < 400 && location !== undefined) {
      const next = new URL(location, current);
      if (next.origin !== origin)
        throw new PermanentFetchError(`redirect to another origin (${next.origin}) refused; only ${origin} is trusted`);
      if (redirects >= (options.maxRedirects ?? 5)) throw new PermanentFetchError(`more than ${redirects} redirects`);
      current = next;
      continue;
    }
    throw new HttpStatusError(`HTTP ${status}`);
  }
}

function getOnce(url: URL, options: HttpGetOptions): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const request =
      url.protocol === 'https:'
        ? httpsRequest(url, { signal: options.signal, ...(options.ca === undefined ? {} : { ca: options.ca }) })
        : httpRequest(url, { signal: options.signal });
    request.once('response', resolve);
    request.once('error', reject);
    request.end();
  });
}

/** The whole body, refusing (and stopping the transfer) once it exceeds `maxBytes`. */
export async function readBoundedBody(response: IncomingMessage, maxBytes: number, what: string): Promise<Buffer> {
  const declared = Number(response.headers['content-length'] ?? 0);
  const tooLarge = (): PermanentFetchError => new PermanentFetchError(`${what} is larger than ${maxBytes} bytes`);
  if (declared > maxBytes) {
    response.destroy();
    throw tooLarge();
  }
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of response as AsyncIterable<Buffer>) {
    total += chunk.length;
    if (total > maxBytes) {
      response.destroy();
      throw tooLarge();
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}
