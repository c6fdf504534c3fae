export type { BootstrapToken } from './bootstrap-token.js';
export {
  BOOTSTRAP_TOKEN_PATTERN,
  NODE_BOOTSTRAP_GROUP,
  bootstrapTokenSecret,
  createBootstrapToken,
  generateBootstrapToken,
} from './bootstrap-token.js';
export type { ClusterComponent, ClusterConfig } from './cluster-config.js';
export { CLUSTER_CONFIG_MAP, clusterConfigMap, parseClusterConfig, readClusterConfig } from './cluster-config.js';
export type { InitConfigInput, JoinConfigInput } from './kubeadm-config.js';
export { CRI_SOCKET, KUBEADM_API, KUBELET_API, initConfiguration, joinConfiguration } from './kubeadm-config.js';
export type { KubeadmRunOptions } from './kubeadm-runner.js';
export { KubeadmError, runKubeadm } from './kubeadm-runner.js';
export { DEFAULT_KUBERNETES_VERSION } from './kubernetes-version.js';
