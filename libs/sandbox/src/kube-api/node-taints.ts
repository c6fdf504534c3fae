import { goQuote, invalidString } from './field-error.js';
import type { FieldError } from './field-error.js';
import { labelValueErrors, qualifiedNameErrors } from './qualified-name.js';

/** core.TaintEffect values validateTaintEffect accepts, in the order it lists them. */
const TAINT_EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];

/** A decoded taint (decodeObject has checked the three strings' types). */
interface Taint {
  key?: string;
  value?: string;
  effect?: string;
  timeAdded?: unknown;
}

/**
 * What kube-apiserver's ValidateNode (pkg/apis/core/validation/validation.go) says of
 * spec.taints through validateNodeTaints: each key a qualified name (ValidateLabelName), each
 * value a label value, each effect one of validateTaintEffect's (empty: Required), and no two
 * taints with the same key and effect (field.Duplicate). ValidateNode passes the path
 * `metadata.taints`, not `spec.taints`: the real server names the field so, and so does this.
 */
export function nodeTaintErrors(taints: readonly Taint[]): FieldError[] {
  const errors: FieldError[] = [];
  const seen = new Map<string, Set<string>>();
  taints.forEach((taint, i) => {
    const path = `metadata.taints[${i}]`;
    const key = taint.key ?? '';
    const value = taint.value ?? '';
    const effect = taint.effect ?? '';
    for (const message of qualifiedNameErrors(key)) errors.push(invalidString(`${path}.key`, key, message));
    const valueMessages = labelValueErrors(value);
    if (valueMessages.length > 0) errors.push(invalidString(`${path}.value`, value, valueMessages.join(';')));
    if (effect === '') errors.push({ field: `${path}.effect`, detail: 'Required value' });
    else if (!TAINT_EFFECTS.includes(effect))
      errors.push({
        field: `${path}.effect`,
        detail: `Unsupported value: ${goQuote(effect)}: supported values: ${TAINT_EFFECTS.map(goQuote).join(', ')}`,
      });
    const keys = seen.get(effect) ?? new Set<string>();
    if (keys.has(key)) {
      errors.push({
        field: path,
        detail: `Duplicate value: ${goTaint(key, value, effect, taint.timeAdded)}: taints must be unique by key and effect pair`,
      });
      return;
    }
    keys.add(key);
    seen.set(effect, keys);
  });
  return errors;
}

/**
 * ErrorBody's %#v of the internal core.Taint that field.Duplicate carries. A set timeAdded is a
 * nested pointer, which %#v prints as its address; the stand-in has none, so it shows a fixed one.
 */
function goTaint(key: string, value: string, effect: string, timeAdded: unknown): string {
  const time = timeAdded === undefined || timeAdded === null ? '(*v1.Time)(nil)' : '(*v1.Time)(0xc000000000)';
  return `core.Taint{Key:${goQuote(key)}, Value:${goQuote(value)}, Effect:${goQuote(effect)}, TimeAdded:${time}}`;
}
