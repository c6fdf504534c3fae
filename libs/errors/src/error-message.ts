/**
 * The message of anything thrown. `catch` binds `unknown`, and libraries (and user code in
 * callbacks) may throw strings or plain objects, so a cast to `Error` would print `undefined`.
 */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (typeof err === 'string') return err;
  if (err === undefined || typeof err === 'function' || typeof err === 'symbol') return String(err);
  try {
    return JSON.stringify(err);
  } catch {
    return Object.prototype.toString.call(err);
  }
}
