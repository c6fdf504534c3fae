export interface TemplateValues {
  Board: string;
  OSVersion: string;
  KubernetesVersion: string;
}

/** One path segment of ordinary characters; starting with a letter or digit rules out `.` and `..`. */
const SAFE_SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._+~-]{0,63}$/;

/**
 * Renders `{{.Board}}`, `{{.OSVersion}}` and `{{.KubernetesVersion}}` (torcx-compatible); other
 * placeholders are errors. Values come from local files and the network, so each must be one
 * safe path segment: an os-release value of `..` must not walk the manifest URL's path.
 */
export function renderUrlTemplate(template: string, values: TemplateValues): string {
  return template.replace(/\{\{\s*\.(\w+)\s*\}\}/g, (_match, name: string) => {
    if (name !== 'Board' && name !== 'OSVersion' && name !== 'KubernetesVersion') {
      throw new Error(
        `manifest URL template has an unknown placeholder {{.${name}}}; known: Board, OSVersion, KubernetesVersion`,
      );
    }
    const value = values[name];
    if (!SAFE_SEGMENT.test(value) || value === '.' || value === '..')
      throw new Error(
        `manifest URL template value ${name} ${JSON.stringify(value.slice(0, 80))} is not a safe path segment (letters, digits and ._+~-, starting with a letter or digit, at most 64)`,
      );
    return encodeURIComponent(value);
  });
}
