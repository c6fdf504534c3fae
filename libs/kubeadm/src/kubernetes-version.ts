/**
 * The Kubernetes version this release installs when the user names none: the release the real
 * programs are built and tested at (tools/kubernetes/k8s/go.mod pins k8s.io/kubernetes to it).
 */
export const DEFAULT_KUBERNETES_VERSION = 'v1.37.2';

/**
 * The minor releases a new cluster may run: the three the Kubernetes project maintains
 * (kubernetes.io/releases: patch releases for the newest three minors), any patch of each.
 */
export const SUPPORTED_KUBERNETES_MINORS: readonly string[] = ['1.35', '1.36', '1.37'];

const RELEASE = /^v(0|[1-9]\d{0,3})\.(0|[1-9]\d{0,3})\.(0|[1-9]\d{0,5})$/;

/**
 * Why `version` cannot be a new cluster's Kubernetes version, for an error that already names the
 * field; undefined when it can. A release `vX.Y.Z` of a supported minor, nothing else (no
 * pre-releases, no build metadata).
 */
export function unsupportedKubernetesVersion(version: string): string | undefined {
  const supported = `supported are ${SUPPORTED_KUBERNETES_MINORS.map((m) => `v${m}`).join(', ')} (any patch release vX.Y.Z)`;
  const match = RELEASE.exec(version);
  if (match === null) {
    return `must be a release like ${DEFAULT_KUBERNETES_VERSION}, got ${JSON.stringify(version.slice(0, 64))}; ${supported}`;
  }
  if (!SUPPORTED_KUBERNETES_MINORS.includes(`${Number(match[1])}.${Number(match[2])}`)) {
    return `Kubernetes ${version} is not supported; ${supported}`;
  }
  return undefined;
}
