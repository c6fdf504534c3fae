import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { errorMessage } from '@constellation/errors';
import { httpGet, PermanentFetchError, readBoundedBody } from './http-get.js';
import { shownUrl } from './shown-url.js';

export interface RetryPolicy {
  tries: number;
  pauseMs: number;
  /** One deadline for the whole fetch, every try and pause included. */
  timeoutMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { tries: 5, pauseMs: 2_000, timeoutMs: 120_000 };

/**
 * Runs `attempt` until it succeeds, `tries` are used up, the deadline passes, or it throws a
 * PermanentFetchError. Transport errors and non-2xx answers are retried, with no pause after the
 * last try. Errors say `<what> failed after N tries: <last cause>`.
 */
export async function withRetry<T>(
  what: string,
  policy: RetryPolicy,
  attempt: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const signal = AbortSignal.timeout(policy.timeoutMs);
  let last = '';
  let tries = 0;
  while (tries < policy.tries) {
    tries++;
    try {
      return await attempt(signal);
    } catch (err) {
      if (err instanceof PermanentFetchError) throw new Error(`${what}: ${err.message}`, { cause: err });
      last = signal.aborted ? `no answer within the deadline of ${policy.timeoutMs} ms` : errorMessage(err);
    }
    if (signal.aborted) break;
    if (tries < policy.tries) await pause(policy.pauseMs, signal);
  }
  throw new Error(`${what} failed after ${tries} tries: ${last}`);
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}

export interface FetchBytesOptions {
  maxBytes: number;
  /** PEM CA certificates pinned for https. */
  ca?: string;
  /** Whether a file:// URL or an absolute path may be read (manifests for air-gapped sites; never components). */
  allowLocal?: boolean;
}

/** The bytes at `location` (http(s), or with `allowLocal` a file:// URL or absolute path), at most `maxBytes`. */
export async function fetchBytes(location: string, policy: RetryPolicy, options: FetchBytesOptions): Promise<Buffer> {
  if (location.startsWith('file://') || location.startsWith('/')) {
    if (options.allowLocal !== true) throw new Error(`fetching ${location}: local files are not allowed here`);
    return readLocalBounded(location.startsWith('/') ? location : fileURLToPath(location), options.maxBytes);
  }
  if (!/^https?:\/\//.test(location))
    throw new Error(`unsupported location "${shownUrl(location)}" (expected http(s)://, file:// or an absolute path)`);
  return withRetry(`fetching ${shownUrl(location)}`, policy, async (signal) => {
    const response = await httpGet(location, { signal, ...(options.ca === undefined ? {} : { ca: options.ca }) });
    return readBoundedBody(response, options.maxBytes, shownUrl(location));
  });
}

async function readLocalBounded(path: string, maxBytes: number): Promise<Buffer> {
  const handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) throw new Error(`${path} is not a regular file`);
    if (stats.size > maxBytes) throw new Error(`${path} is larger than ${maxBytes} bytes`);
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}
