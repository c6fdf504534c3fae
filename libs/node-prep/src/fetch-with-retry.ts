import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { errorMessage } from '@constellation/errors';

export interface RetryPolicy {
  tries: number;
  pauseMs: number;
  /** Bound for one attempt. */
  timeoutMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { tries: 5, pauseMs: 2_000, timeoutMs: 60_000 };

/**
 * The bytes at `location`: an http(s) URL (transport errors and non-2xx answers are retried,
 * with no pause after the last try), a file:// URL, or an absolute path.
 */
export async function fetchBytes(location: string, policy: RetryPolicy = DEFAULT_RETRY): Promise<Buffer> {
  if (location.startsWith('file://')) return readFile(fileURLToPath(location));
  if (location.startsWith('/')) return readFile(location);
  if (!/^https?:\/\//.test(location))
    throw new Error(`unsupported location "${location}" (expected http(s)://, file:// or an absolute path)`);
  let last = '';
  for (let attempt = 1; attempt <= policy.tries; attempt++) {
    try {
      const response = await fetch(location, { signal: AbortSignal.timeout(policy.timeoutMs) });
      if (response.ok) return Buffer.from(await response.arrayBuffer());
      last = `HTTP ${response.status}`;
    } catch (err) {
      last = errorMessage(err);
    }
    if (attempt < policy.tries) await new Promise((resolve) => setTimeout(resolve, policy.pauseMs));
  }
  throw new Error(`fetching ${location} failed after ${policy.tries} tries: ${last}`);
}
