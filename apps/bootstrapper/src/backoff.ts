/** Exponential backoff with full jitter: attempt n waits a random time in [0, min(max, initial·2ⁿ)]. */
export function backoffDelay(
  attempt: number,
  initialMs: number,
  maxMs: number,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(maxMs, initialMs * 2 ** Math.min(attempt, 30));
  return Math.floor(random() * ceiling);
}
