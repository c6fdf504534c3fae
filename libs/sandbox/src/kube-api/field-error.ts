/**
 * A field error as k8s.io/apimachinery/pkg/util/validation/field renders it: the field's path
 * and ErrorBody ("<ErrorType.String()>: <value>: <detail>").
 */
export interface FieldError {
  field: string;
  detail: string;
}

/** A StatusCause of a 422 Invalid (apimachinery pkg/api/errors NewInvalid). */
export interface StatusCause {
  reason: string;
  message: string;
  field: string;
}

/**
 * ErrorType.String() of field/errors.go, read backwards: the CauseType a body starting with that
 * wording came from. "Invalid value" is FieldValueInvalid (TypeInvalid shares the wording, and
 * the stand-in never reports it).
 */
const CAUSE_TYPES: readonly (readonly [string, string])[] = [
  ['Not found', 'FieldValueNotFound'],
  ['Required value', 'FieldValueRequired'],
  ['Duplicate value', 'FieldValueDuplicate'],
  ['Invalid value', 'FieldValueInvalid'],
  ['Unsupported value', 'FieldValueNotSupported'],
  ['Forbidden', 'FieldValueForbidden'],
  ['Too long', 'FieldValueTooLong'],
  ['Too many', 'FieldValueTooMany'],
  ['Internal error', 'InternalError'],
];

/** NewInvalid's causes: one per field error, its type, ErrorBody and field path. */
export function statusCauses(errors: readonly FieldError[]): StatusCause[] {
  return errors.map((e) => ({
    reason: CAUSE_TYPES.find(([wording]) => e.detail.startsWith(wording))?.[1] ?? 'FieldValueInvalid',
    message: e.detail,
    field: e.field,
  }));
}

/** field.Invalid(path, value, detail) for a string value (ErrorBody quotes it with %q). */
export const invalidString = (field: string, value: string, detail: string): FieldError => ({
  field,
  detail: `Invalid value: ${goQuote(value)}: ${detail}`,
});

/** Go's %q of a string: JSON's escaping is the same for the printable ASCII the checks see. */
export function goQuote(value: string): string {
  return JSON.stringify(value);
}
