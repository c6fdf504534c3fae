/*
 * The name checks of k8s.io/apimachinery/pkg/util/validation/validation.go (Kubernetes 1.32),
 * with its messages: IsQualifiedName (label keys, taint keys) and IsValidLabelValue.
 */

const QUALIFIED_NAME_FMT = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
const QUALIFIED_NAME = new RegExp(`^${QUALIFIED_NAME_FMT}$`);
const QUALIFIED_NAME_MESSAGE =
  "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const QUALIFIED_NAME_MAX_LENGTH = 63;

const LABEL_VALUE_FMT = `(${QUALIFIED_NAME_FMT})?`;
const LABEL_VALUE = new RegExp(`^${LABEL_VALUE_FMT}$`);
const LABEL_VALUE_MESSAGE =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_MAX_LENGTH = 63;

const DNS1123_SUBDOMAIN_FMT = '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*';
const DNS1123_SUBDOMAIN = new RegExp(`^${DNS1123_SUBDOMAIN_FMT}$`);
const DNS1123_SUBDOMAIN_MESSAGE =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_MAX_LENGTH = 253;

/** RegexError: the message, its examples (each followed by ", " and joined by " or "), the regex. */
function regexError(message: string, fmt: string, ...examples: string[]): string {
  const shown = examples.map((e) => `'${e}', `).join(' or ');
  return examples.length === 0
    ? `${message} (regex used for validation is '${fmt}')`
    : `${message} (e.g. ${shown}regex used for validation is '${fmt}')`;
}

const maxLengthError = (length: number): string => `must be no more than ${length} characters`;

/** Go's len: bytes of UTF-8. */
const byteLength = (value: string): number => Buffer.byteLength(value);

/** IsDNS1123Subdomain. */
export function dns1123SubdomainErrors(value: string): string[] {
  const errors: string[] = [];
  if (byteLength(value) > DNS1123_SUBDOMAIN_MAX_LENGTH) errors.push(maxLengthError(DNS1123_SUBDOMAIN_MAX_LENGTH));
  if (!DNS1123_SUBDOMAIN.test(value))
    errors.push(regexError(DNS1123_SUBDOMAIN_MESSAGE, DNS1123_SUBDOMAIN_FMT, 'example.com'));
  return errors;
}

/** IsQualifiedName: an optional DNS-subdomain prefix and '/', then a name part of at most 63. */
export function qualifiedNameErrors(value: string): string[] {
  const errors: string[] = [];
  const parts = value.split('/');
  let name: string;
  if (parts.length === 1) {
    name = value;
  } else if (parts.length === 2) {
    const prefix = parts[0] ?? '';
    name = parts[1] ?? '';
    if (prefix === '') errors.push('prefix part must be non-empty');
    else errors.push(...dns1123SubdomainErrors(prefix).map((message) => `prefix part ${message}`));
  } else {
    return [
      `a qualified name ${regexError(QUALIFIED_NAME_MESSAGE, QUALIFIED_NAME_FMT, 'MyName', 'my.name', '123-abc')} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
    ];
  }
  if (name === '') errors.push('name part must be non-empty');
  else if (byteLength(name) > QUALIFIED_NAME_MAX_LENGTH)
    errors.push(`name part ${maxLengthError(QUALIFIED_NAME_MAX_LENGTH)}`);
  if (!QUALIFIED_NAME.test(name))
    errors.push(`name part ${regexError(QUALIFIED_NAME_MESSAGE, QUALIFIED_NAME_FMT, 'MyName', 'my.name', '123-abc')}`);
  return errors;
}

/** IsValidLabelValue's message for a value its pattern refuses. */
export const INVALID_LABEL_VALUE = regexError(LABEL_VALUE_MESSAGE, LABEL_VALUE_FMT, 'MyValue', 'my_value', '12345');

/** IsValidLabelValue: empty, or a name part of at most 63. */
export function labelValueErrors(value: string): string[] {
  const errors: string[] = [];
  if (byteLength(value) > LABEL_VALUE_MAX_LENGTH) errors.push(maxLengthError(LABEL_VALUE_MAX_LENGTH));
  if (!LABEL_VALUE.test(value)) errors.push(INVALID_LABEL_VALUE);
  return errors;
}
