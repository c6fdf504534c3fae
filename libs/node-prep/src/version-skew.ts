import type { KubernetesVersion } from './kubernetes-version.js';

/**
 * Kubernetes' version-skew policy for the kubelet (kubernetes.io/releases/version-skew-policy):
 * it must not be newer than kube-apiserver, and may be up to three minor versions older. Patch
 * releases do not count: a v1.37.3 kubelet under a v1.37.1 API server is within the policy.
 */
export const KUBELET_MAX_MINORS_BEHIND = 3;

const minorName = (v: KubernetesVersion): string => `v${String(v.major)}.${String(v.minor)}`;

/** Why a kubelet of `kubelet` may not run against an API server of `apiServer`; undefined when it may. */
export function kubeletSkewProblem(kubelet: KubernetesVersion, apiServer: KubernetesVersion): string | undefined {
  if (kubelet.major !== apiServer.major) {
    return `a ${minorName(kubelet)} kubelet cannot run against a ${minorName(apiServer)} API server (another major version)`;
  }
  const behind = apiServer.minor - kubelet.minor;
  if (behind < 0) {
    return `a ${minorName(kubelet)} kubelet must not be newer than the ${minorName(apiServer)} API server`;
  }
  if (behind > KUBELET_MAX_MINORS_BEHIND) {
    return `a ${minorName(kubelet)} kubelet is ${String(behind)} minor versions older than the ${minorName(apiServer)} API server (at most ${String(KUBELET_MAX_MINORS_BEHIND)})`;
  }
  return undefined;
}

/** Whether a kubelet of `kubelet` may run against an API server of `apiServer`. */
export function kubeletWithinSkew(kubelet: KubernetesVersion, apiServer: KubernetesVersion): boolean {
  return kubeletSkewProblem(kubelet, apiServer) === undefined;
}
