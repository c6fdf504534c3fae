/**
 * The HTTP status of a failed @kubernetes/client-node call (its ApiException's `code`, e.g. 404 or
 * 409); undefined for anything else thrown (a timeout, a refused connection).
 */
export function apiStatusCode(err: unknown): number | undefined {
  return (err as { code?: number }).code;
}
