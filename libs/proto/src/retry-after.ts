import * as grpc from '@grpc/grpc-js';

/*
 * The client side of the `retry-after-ms` trailer (retryAfterMetadata writes it): reading it from a
 * failed call, and when to try again. The bootstrapper's join client and the join storm's
 * simulated nodes both follow this one policy.
 */

/** Longest wait a service may ask for with `retry-after-ms`; a larger value is capped, not obeyed. */
const MAX_RETRY_AFTER_MS = 5 * 60_000;
/**
 * Shortest wait between attempts whatever a service asks: 100 ms, doubling with each attempt up
 * to 500 ms (the JoinService never asks for less), so a fake JoinService answering "come back now"
 * gets at most two attempts a second from a node (red-team finding: it got ten, indefinitely).
 */
const MIN_RETRY_AFTER_MS = 100;
const MAX_RETRY_AFTER_FLOOR_MS = 500;

/** The `retry-after-ms` trailer of a gRPC error, when the service sent a sane one (capped at 5 min). */
export function readRetryAfter(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const metadata = (err as { metadata?: unknown }).metadata;
  if (!(metadata instanceof grpc.Metadata)) return undefined;
  const [value] = metadata.get('retry-after-ms');
  const ms = Number(typeof value === 'string' ? value : value?.toString());
  return Number.isFinite(ms) && ms >= 0 ? Math.min(ms, MAX_RETRY_AFTER_MS) : undefined;
}

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

/**
 * How long to wait before attempt `attempt + 1`. A service that said when to come back
 * (`askedMs`) is followed, plus a little jitter so nodes told the same time do not all come back
 * at once, like gRPC's retry pushback (gRFC A6: a pushback replaces the backoff delay); it knows
 * its queue, and exponential backoff on top kept nodes of a storm away long after their turn.
 * Without one: exponential backoff with full jitter.
 */
export function retryDelay(
  attempt: number,
  askedMs: number | undefined,
  initialMs: number,
  maxMs: number,
  random: () => number = Math.random,
): number {
  if (askedMs === undefined) return backoffDelay(attempt, initialMs, maxMs, random);
  const floor = Math.min(MIN_RETRY_AFTER_MS * 2 ** Math.min(attempt, 10), MAX_RETRY_AFTER_FLOOR_MS);
  const wait = Math.max(askedMs, floor);
  return wait + Math.floor(random() * Math.min(wait / 10, 1_000));
}
