import { KubeApiError, badRequest } from './kube-api-status.js';
import { csrSpecErrors } from './kube-api/csr-validation.js';
import { statusCauses } from './kube-api/field-error.js';
import {
  INVALID_LABEL_VALUE,
  dns1123SubdomainErrors,
  labelValueErrors,
  qualifiedNameErrors,
} from './kube-api/qualified-name.js';
import type { FieldError } from './kube-api/field-error.js';
import { nodeTaintErrors } from './kube-api/node-taints.js';
import type { KubeObject, ResourceType } from './kube-object-store.js';

/*
 * What kube-apiserver checks before it stores the kinds the stand-in serves. Two stages, as in
 * the real server: decoding (a body that does not fit the Go types: 400 BadRequest, "<Kind> in
 * version "v1" cannot be handled as a <Kind>: ...") and validation (a decoded object that breaks a
 * rule: 422 Invalid, "<Kind> "<name>" is invalid: <field>: Invalid value: ...").
 */

/** IsDNS1123Label (namespace names). */
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** IsConfigMapKey: ConfigMap and Secret data keys. */
const CONFIG_MAP_KEY = /^[-._a-zA-Z0-9]+$/;
/** metav1.MicroTime's wire format: RFC3339Micro = "2006-01-02T15:04:05.000000Z07:00". */
const MICRO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}(Z|[+-]\d{2}:\d{2})$/;
const RFC3339_MICRO = '2006-01-02T15:04:05.000000Z07:00';
/** core/v1 validation: MaxSecretSize and the ConfigMap total size limit (1 MiB each). */
const MAX_DATA_BYTES = 1024 * 1024;

const invalidValue = (field: string, value: unknown, detail: string): FieldError => ({
  field,
  detail: `Invalid value: ${JSON.stringify(value)}: ${detail}`,
});

const qualifiedKind = (type: ResourceType): string => (type.group === '' ? type.kind : `${type.kind}.${type.group}`);

/** Decoding checks (400): the body must be an object whose typed fields parse. */
export function decodeObject(type: ResourceType, body: unknown): KubeObject {
  const cannot = (why: string): KubeApiError =>
    badRequest(`${type.kind} in version "${type.version}" cannot be handled as a ${type.kind}: ${why}`);
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw badRequest('request body must be a JSON object');
  const object = body as Record<string, unknown>;
  const metadata: unknown = object['metadata'] ?? {};
  if (metadata === null || typeof metadata !== 'object' || Array.isArray(metadata))
    throw cannot('json: cannot unmarshal into Go struct field .metadata of type v1.ObjectMeta');
  if (type.kind === 'Secret' && object['data'] !== undefined) {
    for (const [key, value] of Object.entries(record(object['data']))) {
      if (typeof value !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(value) || value.length % 4 !== 0)
        throw cannot(`illegal base64 data at key "${key}"`);
    }
  }
  if (type.kind === 'Lease') {
    const spec = record(object['spec']);
    const wrongType = (field: string, goType: string): KubeApiError =>
      cannot(
        `json: cannot unmarshal ${jsonType(spec[field])} into Go struct field LeaseSpec.spec.${field} of type ${goType}`,
      );
    for (const field of ['holderIdentity', 'strategy', 'preferredHolder']) {
      if (spec[field] !== undefined && spec[field] !== null && typeof spec[field] !== 'string')
        throw wrongType(field, 'string');
    }
    for (const field of ['leaseDurationSeconds', 'leaseTransitions']) {
      if (spec[field] !== undefined && spec[field] !== null && !Number.isInteger(spec[field]))
        throw wrongType(field, 'int32');
    }
    for (const field of ['acquireTime', 'renewTime'] as const) {
      const value = spec[field];
      if (value === undefined || value === null) continue;
      if (typeof value !== 'string' || !MICRO_TIME.test(value) || Number.isNaN(Date.parse(value))) {
        const text = typeof value === 'string' ? value : JSON.stringify(value);
        const fraction = /(\.\d*)?(Z|[+-]\d{2}:\d{2})?$/.exec(text)?.[0] ?? text;
        throw cannot(`parsing time "${text}" as "${RFC3339_MICRO}": cannot parse "${fraction}" as ".000000"`);
      }
    }
  }
  if (type.kind === 'Node') {
    const why = nodeTaintsDecodeError(record(object['spec'])['taints']);
    if (why !== undefined) throw cannot(why);
  }
  return { ...object, metadata: { ...(metadata as Record<string, unknown>) } } as KubeObject;
}

/** encoding/json's error for spec.taints that do not fit []v1.Taint's three strings. */
function nodeTaintsDecodeError(taints: unknown): string | undefined {
  const wrong = (value: unknown, field: string, goType: string): string =>
    `json: cannot unmarshal ${jsonType(value)} into Go struct field ${field} of type ${goType}`;
  if (taints === undefined || taints === null) return undefined;
  if (!Array.isArray(taints)) return wrong(taints, 'NodeSpec.spec.taints', '[]v1.Taint');
  for (const taint of taints as unknown[]) {
    if (taint === null) continue;
    if (typeof taint !== 'object' || Array.isArray(taint)) return wrong(taint, 'NodeSpec.spec.taints', 'v1.Taint');
    const fields = taint as Record<string, unknown>;
    for (const [field, goType] of [
      ['key', 'string'],
      ['value', 'string'],
      ['effect', 'v1.TaintEffect'],
    ] as const) {
      const value = fields[field];
      if (value !== undefined && value !== null && typeof value !== 'string')
        return wrong(value, `Taint.spec.taints.${field}`, goType);
    }
  }
  return undefined;
}

/**
 * Validation (422) of an object about to be stored: ValidateObjectMeta with the kind's name rule,
 * plus ValidateConfigMap / ValidateSecret keys and sizes, ValidateLeaseSpec, ValidateNode's name
 * and taints, and, when `creating`, a CertificateSigningRequest's spec. The 422 carries
 * NewInvalid's message and causes (apimachinery pkg/api/errors/errors.go).
 */
export function validateObject(type: ResourceType, object: KubeObject, creating: boolean): void {
  const errors: FieldError[] = [];
  const name = object.metadata.name as unknown;
  if (typeof name !== 'string' || name === '')
    errors.push({ field: 'metadata.name', detail: 'Required value: name or generateName is required' });
  else errors.push(...nameErrors(type, name));
  errors.push(...labelErrors(object.metadata.labels));
  if (type.kind === 'ConfigMap' || type.kind === 'Secret') errors.push(...dataErrors(type, object));
  if (type.kind === 'Lease') errors.push(...leaseSpecErrors(record(object['spec'])));
  if (type.kind === 'CertificateSigningRequest' && creating) errors.push(...csrSpecErrors(record(object['spec'])));
  if (type.kind === 'Node') {
    const taints = record(object['spec'])['taints'];
    if (Array.isArray(taints)) errors.push(...nodeTaintErrors(taints.map(record)));
  }
  if (errors.length > 0) {
    const shown = typeof name === 'string' ? name : '';
    // ErrorList.ToAggregate: a message that repeats is shown once.
    const list = [...new Set(errors.map((e) => `${e.field}: ${e.detail}`))];
    throw new KubeApiError(
      422,
      'Invalid',
      `${qualifiedKind(type)} "${shown}" is invalid: ${list.length === 1 ? (list[0] ?? '') : `[${list.join(', ')}]`}`,
      {
        name: shown,
        ...(type.group === '' ? {} : { group: type.group }),
        kind: type.kind,
        causes: statusCauses(errors),
      },
    );
  }
}

/** The name rule of each kind: namespaces are DNS-1123 labels, the others DNS-1123 subdomains. */
function nameErrors(type: ResourceType, name: string): FieldError[] {
  if (type.kind === 'Namespace') {
    if (name.length > 63 || !DNS1123_LABEL.test(name))
      return [
        invalidValue(
          'metadata.name',
          name,
          "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        ),
      ];
    return [];
  }
  return dns1123SubdomainErrors(name).map((message) => invalidValue('metadata.name', name, message));
}

/** ValidateLabels: qualified-name keys (IsQualifiedName), label values (IsValidLabelValue). */
function labelErrors(labels: unknown): FieldError[] {
  if (labels === undefined || labels === null) return [];
  const errors: FieldError[] = [];
  for (const [key, value] of Object.entries(record(labels))) {
    errors.push(...qualifiedNameErrors(key).map((message) => invalidValue('metadata.labels', key, message)));
    // A value that is no string is refused as an invalid label value (Go refuses it at decoding).
    const valueErrors = typeof value === 'string' ? labelValueErrors(value) : [INVALID_LABEL_VALUE];
    errors.push(...valueErrors.map((message) => invalidValue('metadata.labels', value, message)));
  }
  return errors;
}

/** ValidateConfigMap / ValidateSecret: IsConfigMapKey for every key, no key twice, 1 MiB in all. */
function dataErrors(type: ResourceType, object: KubeObject): FieldError[] {
  const errors: FieldError[] = [];
  const fields = type.kind === 'ConfigMap' ? ['data', 'binaryData'] : ['data'];
  const seen = new Set<string>();
  let size = 0;
  for (const field of fields) {
    for (const [key, value] of Object.entries(record(object[field]))) {
      if (key.length > 253 || !CONFIG_MAP_KEY.test(key) || key === '.' || key === '..' || key.startsWith('..')) {
        errors.push(
          invalidValue(
            `${field}[${key}]`,
            key,
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
          ),
        );
      }
      if (seen.has(key)) errors.push(invalidValue(`${field}[${key}]`, key, 'duplicate of key present in data'));
      seen.add(key);
      // Go's len: UTF-8 bytes for ConfigMap data; base64 text (longer than its bytes) elsewhere.
      const bytes =
        typeof value !== 'string'
          ? 0
          : field === 'data' && type.kind === 'ConfigMap'
            ? Buffer.byteLength(value)
            : value.length;
      size += key.length + bytes;
    }
  }
  if (size > MAX_DATA_BYTES)
    errors.push({
      field: type.kind === 'Secret' ? 'data' : '',
      detail: `Too long: must have at most ${MAX_DATA_BYTES} bytes`,
    });
  return errors;
}

/** coordination/validation ValidateLeaseSpec. */
function leaseSpecErrors(spec: Record<string, unknown>): FieldError[] {
  const errors: FieldError[] = [];
  const duration = spec['leaseDurationSeconds'];
  if (typeof duration === 'number' && duration <= 0)
    errors.push(invalidValue('spec.leaseDurationSeconds', duration, 'must be greater than 0'));
  const transitions = spec['leaseTransitions'];
  if (typeof transitions === 'number' && transitions < 0)
    errors.push(invalidValue('spec.leaseTransitions', transitions, 'must be greater than or equal to 0'));
  const strategy = spec['strategy'];
  const preferred = spec['preferredHolder'];
  if (
    strategy !== undefined &&
    strategy !== null &&
    strategy !== 'OldestEmulationVersion' &&
    !(typeof strategy === 'string' && strategy.includes('/'))
  )
    errors.push({
      field: 'spec.strategy',
      detail: `Unsupported value: ${JSON.stringify(strategy)}: supported values: "OldestEmulationVersion"`,
    });
  if (
    typeof preferred === 'string' &&
    preferred !== '' &&
    (strategy === undefined || strategy === null || strategy === '')
  )
    errors.push({ field: 'spec.preferredHolder', detail: 'Forbidden: may only be specified if `strategy` is defined' });
  return errors;
}

/** How encoding/json names a JSON value's type in its unmarshal errors. */
function jsonType(value: unknown): string {
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'object') return 'object';
  return typeof value === 'string' ? 'string' : typeof value === 'boolean' ? 'bool' : 'number';
}

function record(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}
