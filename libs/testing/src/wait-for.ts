export interface WaitForOptions {
  /** Upper bound for the whole wait. Every wait in a test has one. */
  timeoutMs: number;
  /** Pause between attempts. */
  intervalMs?: number;
  /** What is being waited for, used in the timeout error. */
  description: string;
}

/**
 * Polls `probe` until it returns a value other than `undefined`/`false`, or throws once
 * `timeoutMs` has passed. Errors thrown by `probe` count as "not yet"; the last one is reported.
 */
export async function waitFor<T>(
  probe: () => T | Promise<T>,
  options: WaitForOptions,
): Promise<Exclude<T, false | undefined>> {
  const deadline = Date.now() + options.timeoutMs;
  const interval = options.intervalMs ?? 25;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value as Exclude<T, false | undefined>;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() >= deadline) {
      const detail = lastError instanceof Error ? `: last error: ${lastError.message}` : '';
      throw new Error(`timed out after ${options.timeoutMs} ms waiting for ${options.description}${detail}`, {
        cause: lastError,
      });
    }
    await sleep(Math.min(interval, Math.max(0, deadline - Date.now())));
  }
}

/** Rejects with a clear message when `promise` does not settle within `timeoutMs`. */
export async function withTimeout<T>(promise: Promise<T>, timeoutMs: number, description: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      reject(new Error(`timed out after ${timeoutMs} ms: ${description}`));
    }, timeoutMs);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
