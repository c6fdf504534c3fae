/** Thrown by a probe when waiting longer cannot help (what it waits for has failed): ends the wait at once. */
export class WaitAbandoned extends Error {}

/**
 * Polls `probe` until it returns a value (not undefined), at most `timeoutMs`: the wait of mini and
 * the node environment, where every step waited for has an explicit signal (a file, a health
 * endpoint, an API object), and every wait has a bound and says what it waited for. A probe's
 * other errors count as "not yet".
 */
export async function waitUntil<T>(
  probe: () => Promise<T | undefined>,
  options: { timeoutMs: number; what: string; intervalMs?: number },
): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err) {
      if (err instanceof WaitAbandoned) throw err;
      lastError = err;
    }
    if (Date.now() >= deadline) break;
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 50));
  }
  throw new Error(`${options.what} did not happen within ${options.timeoutMs} ms`, { cause: lastError });
}
