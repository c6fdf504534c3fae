import * as k8s from '@kubernetes/client-node';

/** What a refused API call answered: its HTTP status and the Status body's reason and message. */
export interface ApiFailure {
  code: number;
  /** Empty when there is no body. */
  reason: string;
  /** Empty when there is no body. */
  message: string;
}

/**
 * Awaits a client-node call that must fail with an API answer and returns that answer. client-node
 * leaves the body undefined for status codes its API description does not list (401), so those
 * come back with an empty reason and message.
 */
export async function apiFailure(call: Promise<unknown>): Promise<ApiFailure> {
  const outcome = await call.then(
    () => new Error('the call succeeded; a refusal was expected'),
    (err: unknown) => err,
  );
  if (!(outcome instanceof k8s.ApiException)) throw outcome;
  const body = (outcome as k8s.ApiException<string | undefined>).body;
  if (body === undefined) return { code: outcome.code, reason: '', message: '' };
  const status = JSON.parse(body) as { reason?: string; message?: string };
  return { code: outcome.code, reason: status.reason ?? '', message: status.message ?? '' };
}
