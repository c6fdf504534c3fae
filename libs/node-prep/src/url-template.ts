export interface TemplateValues {
  Board: string;
  OSVersion: string;
  KubernetesVersion: string;
}

/** Renders `{{.Board}}`, `{{.OSVersion}}` and `{{.KubernetesVersion}}` (torcx-compatible); other placeholders are errors. */
export function renderUrlTemplate(template: string, values: TemplateValues): string {
  return template.replace(/\{\{\s*\.(\w+)\s*\}\}/g, (_match, name: string) => {
    if (name !== 'Board' && name !== 'OSVersion' && name !== 'KubernetesVersion') {
      throw new Error(
        `manifest URL template has an unknown placeholder {{.${name}}}; known: Board, OSVersion, KubernetesVersion`,
      );
    }
    return encodeURIComponent(values[name]);
  });
}
