/** Plain-object form of an Error that survives JSON.stringify (winston prints nested Errors as {}). */
export interface SerializedError {
  name: string;
  message: string;
  stack?: string;
  code?: string | number;
  cause?: SerializedError | string;
}

const MAX_CAUSE_DEPTH = 5;

/** Turns anything thrown into a SerializedError, following `cause` chains a few levels deep. */
export function serializeError(value: unknown, depth = 0): SerializedError {
  if (!(value instanceof Error)) {
    return { name: 'NonError', message: typeof value === 'string' ? value : safeStringify(value) };
  }
  const out: SerializedError = { name: value.name, message: value.message };
  if (value.stack !== undefined) out.stack = value.stack;
  const code: unknown = (value as { code?: unknown }).code;
  if (typeof code === 'string' || typeof code === 'number') out.code = code;
  if (value.cause !== undefined && depth < MAX_CAUSE_DEPTH) {
    out.cause = serializeError(value.cause, depth + 1);
  }
  return out;
}

function safeStringify(value: unknown): string {
  try {
    if (value === undefined || typeof value === 'function' || typeof value === 'symbol') return String(value);
    return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
  } catch {
    return Object.prototype.toString.call(value);
  }
}
