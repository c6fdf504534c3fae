/** Parses KEY=VALUE lines (`export`, comments and surrounding quotes allowed), as systemd EnvironmentFile does. */
export function parseEnvFile(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const raw of text.split('\n')) {
    const line = raw.trim().replace(/^export\s+/, '');
    if (line === '' || line.startsWith('#')) continue;
    const eq = line.indexOf('=');
    if (eq <= 0) continue;
    const key = line.slice(0, eq).trim();
    let value = line.slice(eq + 1).trim();
    if (value.length >= 2 && (value[0] === '"' || value[0] === "'") && value.at(-1) === value[0])
      value = value.slice(1, -1);
    out.set(key, value);
  }
  return out;
}

/** KEY=VALUE lines in sorted key order, so the same input always gives the same bytes. */
export function serializeEnvFile(values: ReadonlyMap<string, string>): string {
  return [...values]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([key, value]) => `${key}=${value}\n`)
    .join('');
}

/** Kubernetes versions in image tags use `_` for `+` (tags cannot contain `+`). */
export const tagToVersion = (tag: string): string => tag.replace(/_/g, '+');
export const versionToTag = (version: string): string => version.replace(/\+/g, '_');

/** The seed keys carried into kubelet.env (0644, read by the kubelet unit); anything else, secrets included, stays out. */
export const KUBELET_ENV_KEYS: readonly string[] = ['KUBELET_IMAGE_URL', 'KUBELET_IMAGE_TAG'];
