import { KubeApiError, badRequest } from './kube-api-status.js';
import { decodeStrategicPatch, strategicMergePatch } from './strategic-merge-patch.js';

/*
 * PATCH as kube-apiserver applies it (staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go):
 * the Content-Type picks the patch format; an unknown one is 415; a patch document that does not
 * decode is 400; a JSON patch whose operations cannot be applied is 422. Strategic merge patches
 * are applied with the served kinds' list strategies (strategic-merge-patch.ts): kubectl patch,
 * taint and cordon send them (label and annotate send JSON merge patches); server-side apply is
 * not served.
 */

export const PATCH_TYPES = {
  json: 'application/json-patch+json',
  merge: 'application/merge-patch+json',
  strategic: 'application/strategic-merge-patch+json',
} as const;

const ACCEPTED = [PATCH_TYPES.json, PATCH_TYPES.merge, 'application/apply-patch+yaml', PATCH_TYPES.strategic];

export type PatchFormat = 'json' | 'merge' | 'strategic';

/** The patch format named by a Content-Type header; 415 for anything else (including apply). */
export function patchFormat(contentType: string | undefined): PatchFormat {
  const media = (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  if (media === PATCH_TYPES.json) return 'json';
  if (media === PATCH_TYPES.merge) return 'merge';
  if (media === PATCH_TYPES.strategic) return 'strategic';
  throw new KubeApiError(
    415,
    'UnsupportedMediaType',
    `the body of the request was in an unknown format - accepted media types include: ${ACCEPTED.join(', ')}`,
  );
}

/** Applies `patch` in `format` to `current`, an object of `kind`, returning the patched document. */
export function applyPatch(current: unknown, patch: unknown, format: PatchFormat, kind: string): unknown {
  if (format === 'strategic') return strategicMergePatch(current, decodeStrategicPatch(patch), kind);
  if (format === 'merge') {
    if (patch === null || typeof patch !== 'object' || Array.isArray(patch))
      throw badRequest('json: cannot unmarshal the merge patch into an object: a merge patch must be a JSON object');
    return mergePatch(current, patch);
  }
  return jsonPatch(current, decodeJsonPatch(patch));
}

/** RFC 7386 JSON merge patch. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const base: Record<string, unknown> =
    target !== null && typeof target === 'object' && !Array.isArray(target)
      ? { ...(target as Record<string, unknown>) }
      : {};
  // Object.fromEntries defines own properties: a "__proto__" key from JSON.parse stays a plain key.
  const changes = Object.entries(patch as Record<string, unknown>);
  const removed = new Set(changes.filter(([, value]) => value === null).map(([key]) => key));
  const kept = Object.entries(base).filter(([key]) => !removed.has(key));
  const updated = changes
    .filter(([, value]) => value !== null)
    .map(([key, value]) => [key, mergePatch(base[key], value)] as const);
  return Object.fromEntries([...kept, ...updated]);
}

interface Operation {
  op: 'add' | 'remove' | 'replace' | 'move' | 'copy' | 'test';
  path: string;
  from?: string;
  value?: unknown;
}

const OPS = new Set(['add', 'remove', 'replace', 'move', 'copy', 'test']);

/** jsonpatch.DecodePatch: an array of operations, each with a known op and a path (400 otherwise). */
function decodeJsonPatch(patch: unknown): Operation[] {
  if (!Array.isArray(patch)) throw badRequest('json: cannot unmarshal object into Go value of type jsonpatch.Patch');
  return patch.map((item: unknown, index) => {
    const op = item as Partial<Operation> | null;
    if (op === null || typeof op !== 'object' || typeof op.op !== 'string' || !OPS.has(op.op))
      throw badRequest(`json patch operation ${index}: unexpected kind of operation`);
    if (typeof op.path !== 'string') throw badRequest(`json patch operation ${index}: missing path`);
    if ((op.op === 'move' || op.op === 'copy') && typeof op.from !== 'string')
      throw badRequest(`json patch operation ${index}: missing from`);
    if ((op.op === 'add' || op.op === 'replace' || op.op === 'test') && !('value' in op))
      throw badRequest(`json patch operation ${index}: missing value`);
    return op as Operation;
  });
}

/** 422 as patch.go answers a JSON patch that does not apply. */
const unapplicable = (message: string): KubeApiError => new KubeApiError(422, 'Invalid', message);

/** RFC 6902 over a copy of `document`. */
function jsonPatch(document: unknown, operations: Operation[]): unknown {
  let doc = structuredClone(document);
  for (const operation of operations) {
    switch (operation.op) {
      case 'add':
        doc = put(doc, operation.path, structuredClone(operation.value), 'add');
        break;
      case 'replace':
        doc = put(doc, operation.path, structuredClone(operation.value), 'replace');
        break;
      case 'remove':
        doc = remove(doc, operation.path);
        break;
      case 'move': {
        const value = read(doc, operation.from ?? '');
        doc = put(remove(doc, operation.from ?? ''), operation.path, value, 'add');
        break;
      }
      case 'copy':
        doc = put(doc, operation.path, structuredClone(read(doc, operation.from ?? '')), 'add');
        break;
      case 'test':
        if (JSON.stringify(read(doc, operation.path)) !== JSON.stringify(operation.value))
          throw unapplicable(`testing value ${operation.path} failed: test failed`);
        break;
    }
  }
  return doc;
}

/** RFC 6901 pointer tokens. */
function tokens(pointer: string): string[] {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) throw unapplicable(`JSON pointer must start with "/": ${JSON.stringify(pointer)}`);
  return pointer
    .slice(1)
    .split('/')
    .map((t) => t.replaceAll('~1', '/').replaceAll('~0', '~'));
}

function isContainer(value: unknown): value is Record<string, unknown> | unknown[] {
  return value !== null && typeof value === 'object';
}

/** The parent container of `pointer` and the last token; 422 when a step is missing. */
function parentOf(doc: unknown, pointer: string): { parent: Record<string, unknown> | unknown[]; key: string } {
  const path = tokens(pointer);
  const key = path.pop();
  if (key === undefined) throw unapplicable('the whole document cannot be the target of this operation');
  let node: unknown = doc;
  for (const step of path) {
    if (!isContainer(node) || !Object.hasOwn(node, step))
      throw unapplicable(`doc is missing path: "${pointer}": missing value`);
    node = (node as Record<string, unknown>)[step];
  }
  if (!isContainer(node)) throw unapplicable(`doc is missing path: "${pointer}": missing value`);
  return { parent: node, key };
}

function read(doc: unknown, pointer: string): unknown {
  let node: unknown = doc;
  for (const step of tokens(pointer)) {
    if (!isContainer(node) || !Object.hasOwn(node, step))
      throw unapplicable(`doc is missing path: "${pointer}": missing value`);
    node = (node as Record<string, unknown>)[step];
  }
  return node;
}

function arrayIndex(array: unknown[], key: string, pointer: string, forAdd: boolean): number {
  if (forAdd && key === '-') return array.length;
  if (!/^(0|[1-9]\d*)$/.test(key)) throw unapplicable(`invalid array index ${JSON.stringify(key)} in "${pointer}"`);
  const index = Number(key);
  if (index > array.length || (!forAdd && index === array.length))
    throw unapplicable(`unable to access invalid index: ${index} in "${pointer}"`);
  return index;
}

function put(doc: unknown, pointer: string, value: unknown, mode: 'add' | 'replace'): unknown {
  if (pointer === '') return value;
  const { parent, key } = parentOf(doc, pointer);
  if (Array.isArray(parent)) {
    const index = arrayIndex(parent, key, pointer, mode === 'add');
    if (mode === 'add') parent.splice(index, 0, value);
    else parent[index] = value;
  } else {
    if (key === '__proto__') throw unapplicable(`invalid key in "${pointer}"`);
    if (mode === 'replace' && !Object.hasOwn(parent, key))
      throw unapplicable(`replace operation does not apply: doc is missing key: ${pointer}: missing value`);
    parent[key] = value;
  }
  return doc;
}

function remove(doc: unknown, pointer: string): unknown {
  const { parent, key } = parentOf(doc, pointer);
  if (Array.isArray(parent)) parent.splice(arrayIndex(parent, key, pointer, false), 1);
  else {
    if (!Object.hasOwn(parent, key))
      throw unapplicable(`remove operation does not apply: doc is missing path: "${pointer}": missing value`);
    Reflect.deleteProperty(parent, key);
  }
  return doc;
}
