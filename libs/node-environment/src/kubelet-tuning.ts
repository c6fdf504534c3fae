import { stringify } from 'yaml';

/**
 * The kubelet settings a node on this host needs, as a kubeadm patch (kubeletconfiguration+merge):
 * cgroup v1 through cgroupfs below the node's own root; swap, disk-pressure eviction and image
 * garbage collection off (kind sets them so: the host's disk and swap are not the node's);
 * kernel defaults not enforced, because the host's sysctls are shared by every node.
 */
export function kubeletTuning(cgroupRoot: string): string {
  return stringify({
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    cgroupDriver: 'cgroupfs',
    cgroupRoot,
    failCgroupV1: false,
    failSwapOn: false,
    protectKernelDefaults: false,
    evictionHard: {
      'memory.available': '0%',
      'nodefs.available': '0%',
      'nodefs.inodesFree': '0%',
      'imagefs.available': '0%',
    },
    imageGCHighThresholdPercent: 100,
  });
}

/** kubeadm preflight checks that do not hold on this host, and why. */
export const IGNORED_PREFLIGHT_CHECKS = [
  // The kernel configuration is not readable and the host mounts cgroup v1.
  'SystemVerification',
];
