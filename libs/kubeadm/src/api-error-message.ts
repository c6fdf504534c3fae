import { errorMessage } from '@constellation/errors';

const MAX_BODY_CHARS = 300;

/** The `message` of a Kubernetes Status body (JSON text or parsed), else the body's own text. */
function bodyText(body: unknown): string {
  let value = body;
  if (typeof body === 'string') {
    try {
      value = JSON.parse(body) as unknown;
    } catch {
      return body.trim();
    }
  }
  const message = (value as { message?: unknown } | null)?.message;
  if (typeof message === 'string') return message;
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/**
 * A failed @kubernetes/client-node call in one line, for refusals and logs: "HTTP 429: Too many
 * requests, please try again later." (the Status message, or a plain-text body such as
 * kube-apiserver's in-flight limit answers). The client's own message spans four lines and dumps
 * the response headers. Anything else thrown (a timeout, a refused connection) keeps its message.
 */
export function apiErrorMessage(err: unknown): string {
  const { code, body } = (err ?? {}) as { code?: unknown; body?: unknown };
  if (typeof code !== 'number' || !(err instanceof Error) || !('headers' in err)) return errorMessage(err);
  const text = body === undefined ? '' : bodyText(body);
  return text === '' ? `HTTP ${code}` : `HTTP ${code}: ${text.slice(0, MAX_BODY_CHARS)}`;
}
