/** Longest version string accepted from any source (a real one is ~20 characters). */
export const MAX_VERSION_LENGTH = 64;

const VERSION = /^v(\d{1,4})\.(\d{1,4})\.(\d{1,6})(?:-([0-9A-Za-z.-]+))?(?:\+([0-9A-Za-z.-]+))?$/;

export interface KubernetesVersion {
  major: number;
  minor: number;
  patch: number;
  /** `rc.1` in `v1.33.0-rc.1`; it sorts before the release. */
  prerelease: string | undefined;
}

/** Parses `v1.32.9`, `v1.33.0-rc.1`, `v1.31.0+node.1`; errors say what was expected. */
export function parseKubernetesVersion(text: string, source: string): KubernetesVersion {
  if (text.length > MAX_VERSION_LENGTH)
    throw new Error(
      `Kubernetes version from ${source} is ${text.length} characters long (at most ${MAX_VERSION_LENGTH})`,
    );
  const match = VERSION.exec(text);
  if (match === null) throw new Error(`Kubernetes version "${text}" from ${source} does not look like v1.32.9`);
  return {
    major: Number(match[1]),
    minor: Number(match[2]),
    patch: Number(match[3]),
    prerelease: match[4],
  };
}

/** Negative, zero or positive as `a` is older than, as old as, or newer than `b` (build metadata ignored). */
export function compareKubernetesVersions(a: KubernetesVersion, b: KubernetesVersion): number {
  const numeric = a.major - b.major || a.minor - b.minor || a.patch - b.patch;
  if (numeric !== 0) return numeric;
  if (a.prerelease === b.prerelease) return 0;
  if (a.prerelease === undefined) return 1;
  if (b.prerelease === undefined) return -1;
  return a.prerelease.localeCompare(b.prerelease, 'en', { numeric: true });
}
