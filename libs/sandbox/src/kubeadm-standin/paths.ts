import { join } from 'node:path';

/** Where the stand-in writes, mirroring kubeadm's layout under the node's root. */
export function standinPaths(root: string): {
  kubernetes: string;
  pki: string;
  manifests: string;
  adminConf: string;
  kubeletConf: string;
  /** The kubelet's --config, written by kubelet-start. */
  kubeletConfig: string;
  /** The control plane's state (control-plane.json: its processes) and its programs' logs (logs/). */
  run: string;
} {
  const kubernetes = join(root, 'etc', 'kubernetes');
  return {
    kubernetes,
    pki: join(kubernetes, 'pki'),
    manifests: join(kubernetes, 'manifests'),
    adminConf: join(kubernetes, 'admin.conf'),
    kubeletConf: join(kubernetes, 'kubelet.conf'),
    kubeletConfig: join(root, 'var', 'lib', 'kubelet', 'config.yaml'),
    run: join(root, 'run', 'kubeadm-standin'),
  };
}
