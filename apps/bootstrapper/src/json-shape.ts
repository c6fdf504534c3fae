// Checks of the few small JSON documents the bootstrapper reads before it listens (instance
// metadata, node state). A schema library would cost every start its whole module graph: esbuild
// assigns files, not exports, to chunks, so zod's core and every locale (~650 KiB) would load with
// the entry as soon as any later chunk also uses zod. Errors name the field and what was expected.

import { isIP } from 'node:net';

/** A JSON object's fields; `path` names it in errors ('' for the document itself). */
export interface JsonFields {
  readonly path: string;
  readonly fields: Readonly<Record<string, unknown>>;
}

function fieldName(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/** The value as an object; with `only`, a field not listed is refused (strict documents). */
export function objectAt(value: unknown, path: string, only?: readonly string[]): JsonFields {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new Error(`${path === '' ? 'document' : path}: expected an object, got ${describe(value)}`);
  const fields = value as Record<string, unknown>;
  if (only !== undefined) {
    const unexpected = Object.keys(fields).find((key) => !only.includes(key));
    if (unexpected !== undefined) throw new Error(`${fieldName(path, unexpected)}: unexpected field`);
  }
  return { path, fields };
}

/** The value as an array, each element read by `item` (errors name the index: `2.role`). */
export function arrayAt<T>(value: unknown, path: string, item: (element: unknown, path: string) => T): T[] {
  if (!Array.isArray(value))
    throw new Error(`${path === '' ? 'document' : path}: expected an array, got ${describe(value)}`);
  return value.map((element: unknown, index) => item(element, fieldName(path, String(index))));
}

/**
 * A string field; `nonEmpty` and `pattern` narrow what is accepted, and `what` says in words what
 * the pattern stands for (the refusal then shows the value).
 */
export function stringField(
  object: JsonFields,
  key: string,
  expect: { nonEmpty?: boolean; pattern?: RegExp; what?: string } = {},
): string {
  const value = object.fields[key];
  const name = fieldName(object.path, key);
  if (typeof value !== 'string') throw new Error(`${name}: expected a string, got ${describe(value)}`);
  if (expect.nonEmpty === true && value === '') throw new Error(`${name}: expected a non-empty string`);
  if (expect.pattern !== undefined && !expect.pattern.test(value))
    throw new Error(
      expect.what === undefined
        ? `${name}: expected a string matching ${String(expect.pattern)}`
        : `${name}: expected ${expect.what}, got ${JSON.stringify(value.slice(0, 300))}`,
    );
  return value;
}

/** RFC 1123 subdomain, as Kubernetes names nodes: lower case, at most 253 characters. */
const DNS_SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$/;

/** A string field holding a Kubernetes node name (an RFC 1123 subdomain). */
export function nodeNameField(object: JsonFields, key: string): string {
  return stringField(object, key, {
    pattern: DNS_SUBDOMAIN,
    what: 'a Kubernetes node name (lower-case letters, digits, "-" and ".", at most 253 characters)',
  });
}

/** A string field holding a host: an IP address (no zone index) or a DNS name (any case). */
export function hostField(object: JsonFields, key: string): string {
  const value = stringField(object, key);
  if (isAddress(value) || DNS_SUBDOMAIN.test(value.toLowerCase())) return value;
  throw new Error(
    `${fieldName(object.path, key)}: expected an IP address or a DNS name, got ${JSON.stringify(value.slice(0, 300))}`,
  );
}

/** An address a certificate can carry: a zone index ("fe80::1%eth0") is the local host's, not the node's. */
function isAddress(value: string): boolean {
  return isIP(value) !== 0 && !value.includes('%');
}

/** A string field holding an IPv4 or IPv6 address in text form, without a zone index. */
export function ipAddressField(object: JsonFields, key: string): string {
  const value = stringField(object, key);
  if (!isAddress(value))
    throw new Error(
      `${fieldName(object.path, key)}: expected an IP address${value.includes('%') ? ' without a zone index' : ''}, got ${JSON.stringify(value.slice(0, 300))}`,
    );
  return value;
}

/** A string field that must be one of `choices`. */
export function choiceField<Choice extends string>(
  object: JsonFields,
  key: string,
  choices: readonly Choice[],
): Choice {
  const value = object.fields[key];
  const found = choices.find((choice) => choice === value);
  if (found === undefined)
    throw new Error(
      `${fieldName(object.path, key)}: expected one of ${choices.map((c) => JSON.stringify(c)).join(', ')}, got ${typeof value === 'string' ? JSON.stringify(value) : describe(value)}`,
    );
  return found;
}

/** A safe-integer number field, within `range` when given. */
export function integerField(object: JsonFields, key: string, range?: { min: number; max: number }): number {
  const value = object.fields[key];
  const name = fieldName(object.path, key);
  if (typeof value !== 'number' || !Number.isSafeInteger(value))
    throw new Error(`${name}: expected an integer, got ${typeof value === 'number' ? String(value) : describe(value)}`);
  if (range !== undefined && (value < range.min || value > range.max))
    throw new Error(
      `${name}: expected an integer from ${String(range.min)} to ${String(range.max)}, got ${String(value)}`,
    );
  return value;
}
