import { KubeApiError, badRequest } from './kube-api-status.js';

/*
 * Strategic merge patch as kube-apiserver applies it to the built-in kinds the stand-in serves:
 * staging/src/k8s.io/apimachinery/pkg/util/strategicpatch/patch.go StrategicMergeMapPatch
 * (mergeMap, mergeSlice, mergePatchIntoOriginal, applyRetainKeysDirective), with the list strategies
 * that the Go types' `patchStrategy` / `patchMergeKey` struct tags give (LIST_STRATEGIES below).
 * A list without a strategy is replaced; a merge list of maps merges by its key; a merge list of
 * scalars is a set. Go's quirks are kept where a client could see them: a directive sent for a
 * field the object does not have is stored as sent, key order follows the patch (Go's map order is
 * random), and errors the handler does not translate (interpretStrategicMergePatchError in
 * staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go) are 500 with no reason.
 */

type Json = string | number | boolean | null | JsonObject | Json[];
export interface JsonObject {
  [key: string]: Json;
}

/** A struct field's patch metadata; `fields` are the patch metadata of its (element) struct. */
interface FieldMeta {
  strategy?: 'merge';
  mergeKey?: string;
  fields?: Record<string, FieldMeta>;
}

/** staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/types.go ObjectMeta. */
const OBJECT_META: FieldMeta = {
  fields: {
    ownerReferences: { strategy: 'merge', mergeKey: 'uid' },
    finalizers: { strategy: 'merge' },
  },
};

/**
 * The fields with a patch strategy in each served kind's Go type; every other list is replaced.
 * core/v1 (staging/src/k8s.io/api/core/v1/types.go): NodeSpec.podCIDRs merge (NodeSpec.taints has
 * none), NodeStatus.conditions and .addresses merge by type, NamespaceStatus.conditions merge by
 * type (NamespaceSpec.finalizers has none). Secret, ConfigMap, coordination/v1 Lease,
 * certificates/v1 CertificateSigningRequest (status.conditions is listType=map but has no
 * patchStrategy tag) and rbac/v1 ClusterRoleBinding (subjects) have none beyond ObjectMeta's.
 */
export const LIST_STRATEGIES: Readonly<Record<string, FieldMeta>> = {
  Node: {
    fields: {
      metadata: OBJECT_META,
      spec: { fields: { podCIDRs: { strategy: 'merge' } } },
      status: {
        fields: {
          conditions: { strategy: 'merge', mergeKey: 'type' },
          addresses: { strategy: 'merge', mergeKey: 'type' },
        },
      },
    },
  },
  Namespace: {
    fields: { metadata: OBJECT_META, status: { fields: { conditions: { strategy: 'merge', mergeKey: 'type' } } } },
  },
  Secret: { fields: { metadata: OBJECT_META } },
  ConfigMap: { fields: { metadata: OBJECT_META } },
  Lease: { fields: { metadata: OBJECT_META } },
  CertificateSigningRequest: { fields: { metadata: OBJECT_META } },
  ClusterRoleBinding: { fields: { metadata: OBJECT_META } },
};

const DIRECTIVE = '$patch';
const RETAIN_KEYS = '$retainKeys';
const DELETE_FROM_PRIMITIVE_LIST = '$deleteFromPrimitiveList';
const SET_ELEMENT_ORDER = '$setElementOrder';

/** An error StrategicMergeMapPatch returns that the handler passes on as is: 500, no reason. */
const unknownError = (message: string): KubeApiError => new KubeApiError(500, '', message);

// mergepatch/errors.go sentinels that interpretStrategicMergePatchError maps to 400 and 422.
const badPrimitiveList = (): KubeApiError => badRequest('invalid patch format of primitive list');
const badRetainKeys = (): KubeApiError => badRequest('invalid patch format of retainKeys');
const badSetElementOrder = (): KubeApiError => badRequest('invalid patch format of setElementOrder list');
const listOfLists = (): KubeApiError => new KubeApiError(422, '', 'lists of lists are not supported');

function isObject(value: unknown): value is JsonObject {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** The Go type encoding/json (with PreserveInts) decodes a value to, as reflect names it. */
function goType(value: Json | undefined): string {
  if (value === null || value === undefined) return '<nil>';
  if (Array.isArray(value)) return '[]interface {}';
  if (typeof value === 'object') return 'map[string]interface {}';
  if (typeof value === 'number') return Number.isInteger(value) ? 'int64' : 'float64';
  return typeof value === 'boolean' ? 'bool' : 'string';
}

/** fmt's %v of a decoded JSON value: maps with sorted keys, `[a b]`, `<nil>`. */
function goFormat(value: Json | undefined): string {
  if (value === null || value === undefined) return '<nil>';
  if (Array.isArray(value)) return `[${value.map(goFormat).join(' ')}]`;
  if (typeof value === 'object') {
    const keys = Object.keys(value).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    return `map[${keys.map((key) => `${key}:${goFormat(value[key])}`).join(' ')}]`;
  }
  return String(value);
}

/** fmt's %s: a string as is, anything else as `%!s(type=value)`. */
const goString = (value: Json | undefined): string =>
  typeof value === 'string' ? value : `%!s(${goType(value)}=${goFormat(value)})`;

// mergepatch/errors.go
const noMergeKey = (map: JsonObject, key: string): KubeApiError =>
  unknownError(`map: ${goFormat(map)} does not contain declared merge key: ${key}`);
const badArgType = (expected: string, actual: Json | undefined): KubeApiError =>
  unknownError(`expected a ${expected}, but received a ${goType(actual)}`);
const badPatchType = (type: Json | undefined, map: JsonObject): KubeApiError =>
  unknownError(`unknown patch type: ${goString(type)} in map: ${goFormat(map)}`);

/** Go's `==` on two decoded JSON values, as far as JSON scalars go (maps and lists never match). */
const goEqual = (a: Json | undefined, b: Json | undefined): boolean =>
  (a ?? null) === (b ?? null) && (a === null || typeof a !== 'object');

/**
 * Applies a strategic merge patch for `kind` to `current`. The patch must already be a JSON
 * object; `current` is not modified.
 */
export function strategicMergePatch(current: unknown, patch: JsonObject, kind: string): unknown {
  const meta = LIST_STRATEGIES[kind];
  // patch.go (handlers) serves strategic merge only for kinds with Go types: not for custom resources.
  if (meta === undefined)
    throw new KubeApiError(
      415,
      'UnsupportedMediaType',
      'the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml',
    );
  const original = isObject(current) ? structuredClone(current) : {};
  return fromUnstructuredNulls(mergeMap(original, structuredClone(patch), meta), kind);
}

/** The map[string]string fields of the served kinds (a null value in them decodes to ""). */
const STRING_MAPS: Readonly<Record<string, readonly string[]>> = {
  ConfigMap: ['data'],
  Secret: ['stringData'],
};

/**
 * The nulls a patch leaves where the object had no field (mergeMap stores such values as sent)
 * decode as runtime.DefaultUnstructuredConverter.FromUnstructured decodes them
 * (staging/src/k8s.io/apimachinery/pkg/runtime/converter.go, the step after the merge in
 * applyPatchToObject): a map[string]string entry becomes "" (mapFromUnstructured), a struct
 * field its zero value, which the stand-in leaves out.
 */
function fromUnstructuredNulls(object: JsonObject, kind: string): JsonObject {
  const stringMaps = new Set(['metadata.labels', 'metadata.annotations', ...(STRING_MAPS[kind] ?? [])]);
  const walk = (value: JsonObject, path: string): JsonObject => {
    const stringMap = stringMaps.has(path);
    const entries: [string, Json][] = [];
    for (const [key, item] of Object.entries(value)) {
      const at = path === '' ? key : `${path}.${key}`;
      if (item === null) {
        if (stringMap) entries.push([key, '']);
      } else if (stringMap) entries.push([key, item]);
      else if (isObject(item)) entries.push([key, walk(item, at)]);
      else if (Array.isArray(item)) entries.push([key, item.map((e) => (isObject(e) ? walk(e, `${at}[]`) : e))]);
      else entries.push([key, item]);
    }
    return Object.fromEntries(entries);
  };
  return walk(object, '');
}

/** Decodes the request body as the handler's json.Unmarshal into map[string]interface{} does. */
export function decodeStrategicPatch(patch: unknown): JsonObject {
  if (patch === null) return {};
  if (isObject(patch)) return patch;
  const what = Array.isArray(patch) ? 'array' : typeof patch === 'boolean' ? 'bool' : typeof patch;
  throw badRequest(`json: cannot unmarshal ${what} into Go value of type map[string]interface {}`);
}

/** Sets an own property: a "__proto__" key from JSON.parse stays a plain key. */
function put(object: JsonObject, key: string, value: Json): void {
  Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
}

const fieldOf = (meta: FieldMeta | undefined, key: string): FieldMeta | undefined => meta?.fields?.[key];

/** patch.go mergeMap, with MergeParallelList and IgnoreUnmatchedNulls (the server's options). */
function mergeMap(original: JsonObject, patch: JsonObject, meta: FieldMeta | undefined): JsonObject {
  if (Object.hasOwn(patch, DIRECTIVE)) {
    const directive = patch[DIRECTIVE];
    if (directive === 'replace') {
      const { [DIRECTIVE]: _directive, ...rest } = patch;
      return rest;
    }
    if (directive === 'delete') return {};
    throw badPatchType(directive, patch);
  }
  applyRetainKeys(original, patch);
  mergeSetElementOrder(original, patch, meta);
  for (const [patchKey, value] of Object.entries(patch)) {
    let key = patchKey;
    let deleteList = false;
    if (patchKey.startsWith(DELETE_FROM_PRIMITIVE_LIST)) {
      key = directiveField(patchKey, DELETE_FROM_PRIMITIVE_LIST, badPrimitiveList);
      deleteList = true;
    }
    if (value === null) {
      Reflect.deleteProperty(original, key);
      continue;
    }
    const present = original[key];
    // A field the object lacks takes the patch value as sent, directives included (as Go does).
    if (!Object.hasOwn(original, key) || present === undefined || goType(present) !== goType(value)) {
      put(original, key, value);
      continue;
    }
    const field = fieldOf(meta, key);
    if (isObject(present) && isObject(value)) put(original, key, mergeMap(present, value, field));
    else if (Array.isArray(present) && Array.isArray(value))
      put(original, key, field?.strategy === 'merge' ? mergeSlice(present, value, field, deleteList) : value);
    else put(original, key, value);
  }
  return original;
}

/** extractKey: the field a `$prefix/field` directive names. */
function directiveField(key: string, prefix: string, error: () => KubeApiError): string {
  const slash = key.indexOf('/');
  if (slash < 0 || key.slice(0, slash) !== prefix) throw error();
  return key.slice(slash + 1);
}

/** applyRetainKeysDirective: keep only the listed fields; the patch may set no other. */
function applyRetainKeys(original: JsonObject, patch: JsonObject): void {
  if (!Object.hasOwn(patch, RETAIN_KEYS)) return;
  const list = patch[RETAIN_KEYS];
  Reflect.deleteProperty(patch, RETAIN_KEYS);
  if (!Array.isArray(list)) throw badRetainKeys();
  const retained = (key: string): boolean => list.some((item) => item === key);
  for (const [key, value] of Object.entries(patch)) {
    if (value === null || key.startsWith(DELETE_FROM_PRIMITIVE_LIST) || key.startsWith(SET_ELEMENT_ORDER)) continue;
    if (!retained(key)) throw badRetainKeys();
  }
  for (const key of Object.keys(original)) if (!retained(key)) Reflect.deleteProperty(original, key);
}

/** mergePatchIntoOriginal: merges each list a `$setElementOrder/field` names, in that order. */
function mergeSetElementOrder(original: JsonObject, patch: JsonObject, meta: FieldMeta | undefined): void {
  for (const directiveKey of Object.keys(patch).filter((k) => k.startsWith(SET_ELEMENT_ORDER))) {
    const order = patch[directiveKey];
    Reflect.deleteProperty(patch, directiveKey);
    if (!Array.isArray(order)) throw badArgType('[]interface {}', order);
    const key = directiveField(directiveKey, SET_ELEMENT_ORDER, badSetElementOrder);
    const foundOriginal = Object.hasOwn(original, key);
    const foundPatch = Object.hasOwn(patch, key);
    const originalList = original[key];
    const patchList = patch[key];
    if (foundOriginal && !Array.isArray(originalList)) throw badArgType('[]interface {}', originalList);
    if (foundPatch && !Array.isArray(patchList)) throw badArgType('[]interface {}', patchList);
    const originalItems = Array.isArray(originalList) ? originalList : [];
    const patchItems = Array.isArray(patchList) ? patchList : [];
    const field = fieldOf(meta, key);
    const mergeKey = field?.mergeKey ?? '';
    checkOrderMatchesPatch(patchItems, order, mergeKey);
    let merged: Json[];
    if (foundOriginal && !foundPatch) merged = originalItems;
    else if (!foundOriginal && foundPatch) merged = patchItems;
    else if (foundOriginal && foundPatch)
      merged = field?.strategy === 'merge' ? mergeSlice(originalItems, patchItems, field, false) : patchItems;
    else continue;
    const { inList, rest } = partition(merged, order, mergeKey);
    const map = elementKind(originalItems, patchItems) === 'map';
    put(original, key, normalizeElementOrder(inList, rest, order, originalItems, mergeKey, map));
    Reflect.deleteProperty(patch, key);
  }
}

/** validatePatchWithSetOrderList: the patch list's items appear in the order list, in its order. */
function checkOrderMatchesPatch(patchList: Json[], order: Json[], mergeKey: string): void {
  if (order.length === 0 || patchList.length === 0) return;
  const kept = mergeKey === '' ? patchList : splitDeletions(patchList).kept;
  let patchIndex = 0;
  let orderIndex = 0;
  while (patchIndex < kept.length && orderIndex < order.length) {
    const item = kept[patchIndex] ?? null;
    if (isObject(item) && Object.hasOwn(item, DIRECTIVE)) {
      patchIndex++;
      continue;
    }
    if (mergeKeyEqual(item, order[orderIndex], mergeKey)) patchIndex++;
    orderIndex++;
  }
  if (patchIndex < kept.length)
    throw unknownError(
      `The order in patch list:\n${goFormat(patchList)}\n doesn't match ${SET_ELEMENT_ORDER} list:\n${goFormat(order)}\n`,
    );
}

/** mergeKeyValueEqual */
function mergeKeyEqual(left: Json, right: Json | undefined, mergeKey: string): boolean {
  if (mergeKey === '') return goEqual(left, right);
  if (!isObject(left)) throw badArgType('map[string]interface {}', left);
  if (!isObject(right)) throw badArgType('map[string]interface {}', right);
  if (!Object.hasOwn(left, mergeKey)) throw noMergeKey(left, mergeKey);
  if (!Object.hasOwn(right, mergeKey)) throw noMergeKey(right, mergeKey);
  return goEqual(left[mergeKey], right[mergeKey]);
}

/** extractToDeleteItems: the elements without and with `$patch: delete`. */
function splitDeletions(list: Json[]): { kept: Json[]; deleted: Json[] } {
  const kept: Json[] = [];
  const deleted: Json[] = [];
  for (const item of list) {
    if (!isObject(item)) throw badArgType('map[string]interface {}', item);
    (item[DIRECTIVE] === 'delete' ? deleted : kept).push(item);
  }
  return { kept, deleted };
}

/** sliceElementType: every element has one Go type, and none is a list. */
function elementKind(...lists: Json[][]): string {
  let found: string | undefined;
  for (const list of lists) {
    for (const item of list) {
      const type = goType(item);
      if (found === undefined) {
        if (type === '[]interface {}') throw listOfLists();
        found = type;
      } else if (type !== found) throw unknownError(`list element types are not identical: ${goFormat(lists)}`);
    }
  }
  if (found === undefined) throw unknownError('no elements in any of the given slices');
  return found === 'map[string]interface {}' ? 'map' : found;
}

/** mergeSlice for a list whose field has patchStrategy merge. */
function mergeSlice(original: Json[], patch: Json[], field: FieldMeta, deleteList: boolean): Json[] {
  if (original.length === 0 && patch.length === 0) return original;
  const kind = elementKind(original, patch);
  const mergeKey = field.mergeKey ?? '';
  let serverOrder = original;
  let patchOrder = patch;
  let merged: Json[];
  if (kind !== 'map') {
    // $deleteFromPrimitiveList/<field>: remove the listed values, nothing else (deleteFromSlice).
    if (deleteList) return original.filter((item) => !patch.some((gone) => goEqual(gone, item)));
    merged = dedupe([...original, ...patch]);
  } else {
    if (mergeKey === '') throw unknownError('cannot merge lists without merge key for type string');
    ({ serverOrder, patchOrder } = applySpecialElements(original, patch, mergeKey));
    merged = mergeByKey(serverOrder, patchOrder, mergeKey, field);
  }
  const { inList, rest } = partition(merged, patchOrder, mergeKey);
  return normalizeElementOrder(inList, rest, patchOrder, serverOrder, mergeKey, kind === 'map');
}

function dedupe(items: Json[]): Json[] {
  return items.filter((item, index) => items.findIndex((other) => goEqual(other, item)) === index);
}

/**
 * mergeSliceWithSpecialElements: `$patch: delete` elements remove every element with their key,
 * `$patch: replace` makes the other patch elements the list; `merge` and anything else is refused.
 */
function applySpecialElements(
  original: Json[],
  patch: Json[],
  mergeKey: string,
): { serverOrder: Json[]; patchOrder: Json[] } {
  let remaining = original;
  const plain: Json[] = [];
  let replace = false;
  for (const item of patch as JsonObject[]) {
    if (!Object.hasOwn(item, DIRECTIVE)) {
      plain.push(item);
      continue;
    }
    const directive = item[DIRECTIVE];
    if (directive === 'delete') {
      if (!Object.hasOwn(item, mergeKey)) throw noMergeKey(item, mergeKey);
      remaining = remaining.filter((kept) => !goEqual((kept as JsonObject)[mergeKey], item[mergeKey]));
    } else if (directive === 'replace') replace = true;
    else if (directive === 'merge') throw unknownError('merging lists cannot yet be specified in the patch');
    else throw badPatchType(directive, item);
  }
  return replace ? { serverOrder: plain, patchOrder: [] } : { serverOrder: remaining, patchOrder: plain };
}

/** mergeSliceWithoutSpecialElements: merge each patch element into the one with its key, else append. */
function mergeByKey(original: Json[], patch: Json[], mergeKey: string, field: FieldMeta): Json[] {
  const merged = [...original];
  for (const item of patch as JsonObject[]) {
    if (!Object.hasOwn(item, mergeKey)) throw noMergeKey(item, mergeKey);
    const index = merged.findIndex((kept) => isObject(kept) && goEqual(kept[mergeKey], item[mergeKey]));
    const found = merged[index];
    if (index >= 0 && isObject(found)) merged[index] = mergeMap(found, item, field);
    else merged.push(item);
  }
  return merged;
}

/** partitionMapsByPresentInList / partitionPrimitivesByPresentInList. */
function partition(merged: Json[], by: Json[], mergeKey: string): { inList: Json[]; rest: Json[] } {
  const inList: Json[] = [];
  const rest: Json[] = [];
  for (const item of merged) {
    let found: boolean;
    if (mergeKey === '') found = by.some((other) => goEqual(other, item));
    else {
      if (!isObject(item)) throw badArgType('map[string]interface {}', item);
      if (!Object.hasOwn(item, mergeKey)) throw noMergeKey(item, mergeKey);
      found = by.some((other) => isObject(other) && goEqual(other[mergeKey], item[mergeKey]));
    }
    (found ? inList : rest).push(item);
  }
  return { inList, rest };
}

/** index(): position of an element (by merge key for maps) in `list`, or -1. */
function indexIn(list: Json[], item: Json, mergeKey: string, map: boolean): number {
  const value = (v: Json): Json | undefined => (map ? (isObject(v) ? v[mergeKey] : undefined) : v);
  return list.findIndex((other) => goEqual(value(other), value(item)));
}

/** normalizeSliceOrder: sort by position in `order`; `$patch: delete` elements go last. */
function sortByOrder(items: Json[], order: Json[], mergeKey: string, map: boolean): Json[] {
  let sorted = items;
  let deleted: Json[] = [];
  if (map) {
    for (const item of [...items, ...order]) {
      if (!isObject(item)) throw badArgType('map[string]interface {}', item);
      if (!Object.hasOwn(item, mergeKey)) throw noMergeKey(item, mergeKey);
    }
    ({ kept: sorted, deleted } = splitDeletions(items));
  }
  // sort.SliceStable's insertion sort with patch.go's less, which calls an element missing from
  // `order` smaller than anything: such elements move to the front.
  const less = (a: Json, b: Json): boolean => {
    const ia = indexIn(order, a, mergeKey, map);
    const ib = indexIn(order, b, mergeKey, map);
    return ia >= 0 && ib >= 0 ? ia < ib : true;
  };
  const out = [...sorted];
  for (let i = 1; i < out.length; i++) {
    for (let j = i; j > 0 && less(out[j] as Json, out[j - 1] as Json); j--) {
      [out[j - 1], out[j]] = [out[j] as Json, out[j - 1] as Json];
    }
  }
  return [...out, ...deleted];
}

/**
 * normalizeElementOrder + mergeSortedSlice: patch elements in the patch's order, server-only ones
 * in the server's order, a server-only element placed before a patch element when the server had
 * it first; patch elements the server did not have come before the remaining server-only ones.
 */
function normalizeElementOrder(
  patchItems: Json[],
  serverOnly: Json[],
  patchOrder: Json[],
  serverOrder: Json[],
  mergeKey: string,
  map: boolean,
): Json[] {
  const right = sortByOrder(patchItems, patchOrder, mergeKey, map);
  const left = sortByOrder(serverOnly, serverOrder, mergeKey, map);
  const result: Json[] = [];
  let i = 0;
  let j = 0;
  while (i < left.length || j < right.length) {
    const l = left[i];
    const r = right[j];
    if (l === undefined) {
      result.push(r as Json);
      j++;
    } else if (r === undefined) {
      result.push(l);
      i++;
    } else {
      const li = indexIn(serverOrder, l, mergeKey, map);
      const ri = indexIn(serverOrder, r, mergeKey, map);
      if (li >= 0 && ri >= 0 && li < ri) {
        result.push(l);
        i++;
      } else {
        result.push(r);
        j++;
      }
    }
  }
  return result;
}
