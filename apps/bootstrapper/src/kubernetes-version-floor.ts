import { compareKubernetesVersions, parseKubernetesVersion } from '@constellation/node-prep/kubernetes-version';

/**
 * Why `version` is older than the node image's `--minimum-kubernetes-version`, or undefined when
 * it is not (or the image sets no minimum). Whoever names the version (the init request, a join
 * ticket) could otherwise set the node up with any older Kubernetes its components exist for.
 */
export function belowVersionFloor(version: string, minimum: string | undefined): string | undefined {
  if (minimum === undefined) return undefined;
  const floor = parseKubernetesVersion(minimum, '--minimum-kubernetes-version');
  if (compareKubernetesVersions(parseKubernetesVersion(version, 'the request'), floor) >= 0) return undefined;
  return `Kubernetes ${version} is older than this node image's minimum ${minimum} (downgrade refused)`;
}
