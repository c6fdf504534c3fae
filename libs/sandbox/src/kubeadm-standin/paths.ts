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
  run: string;
  apiServerState: string;
  apiServerLog: string;
  /** kube-apiserver's `--token-auth-file`: static bearer tokens (mini's JoinService service account). */
  tokenAuthFile: string;
} {
  const kubernetes = join(root, 'etc', 'kubernetes');
  const run = join(root, 'run', 'kubeadm-standin');
  return {
    kubernetes,
    pki: join(kubernetes, 'pki'),
    manifests: join(kubernetes, 'manifests'),
    adminConf: join(kubernetes, 'admin.conf'),
    kubeletConf: join(kubernetes, 'kubelet.conf'),
    kubeletConfig: join(root, 'var', 'lib', 'kubelet', 'config.yaml'),
    run,
    apiServerState: join(run, 'apiserver.json'),
    apiServerLog: join(run, 'apiserver.log'),
    tokenAuthFile: join(kubernetes, 'known-tokens.csv'),
  };
}
