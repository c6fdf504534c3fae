import { serializeError } from './serialize-error.js';

/**
 * Field names that may hold secrets. Matching is on the field name, case-insensitive, so
 * `masterSecret`, `init_secret`, `stateDiskKey`, `token` and `passphrase` are all caught. The
 * code should not log such values in the first place; this is the second line of defence.
 */
const SECRET_FIELD = /secret|passphrase|password|token|privatekey|private_key|diskkey|disk_key|sealkey/i;

export const REDACTED = '[redacted]';

const MAX_DEPTH = 6;

/** Makes log fields JSON-safe: Errors serialised, bigints as strings, buffers summarised, secrets redacted. */
export function sanitizeFields(fields: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) {
    out[key] = SECRET_FIELD.test(key) ? REDACTED : sanitizeValue(value, 0);
  }
  return out;
}

function sanitizeValue(value: unknown, depth: number): unknown {
  if (value instanceof Error) return serializeError(value);
  if (typeof value === 'bigint') return value.toString();
  if (Buffer.isBuffer(value) || value instanceof Uint8Array) return `<${value.byteLength} bytes>`;
  if (value === null || typeof value !== 'object') return value;
  if (depth >= MAX_DEPTH) return '[too deep]';
  if (Array.isArray(value)) return value.map((item) => sanitizeValue(item, depth + 1));
  if (value instanceof Date) return value.toISOString();
  if (value instanceof Map || value instanceof Set) return `[${value.constructor.name} of ${value.size}]`;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    out[key] = SECRET_FIELD.test(key) ? REDACTED : sanitizeValue(inner, depth + 1);
  }
  return out;
}
