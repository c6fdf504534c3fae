export type { BootstrapToken } from './bootstrap-token.js';
export {
  BOOTSTRAP_TOKEN_PATTERN,
  JOIN_SERVICE_MINTER,
  MINTED_BY_LABEL,
  NODE_BOOTSTRAP_GROUP,
  bootstrapTokenSecret,
  createBootstrapToken,
  generateBootstrapToken,
} from './bootstrap-token.js';
export type { ClusterComponent, ClusterConfig } from './cluster-config.js';
export { CLUSTER_CONFIG_MAP, clusterConfigMap, parseClusterConfig, readClusterConfig } from './cluster-config.js';
export {
  INIT_TOKEN_GROUP,
  INIT_TOKEN_TTL,
  deleteUnmintedBootstrapTokens,
  initBootstrapTokens,
} from './init-bootstrap-token.js';
export type { InitConfigInput, JoinConfigInput } from './kubeadm-config.js';
export {
  CRI_SOCKET,
  KUBEADM_API,
  KUBELET_API,
  KUBELET_CERT_DIR,
  KUBELET_SERVING_CERT_FILE,
  KUBELET_SERVING_KEY_FILE,
  initConfiguration,
  joinConfiguration,
} from './kubeadm-config.js';
export type { KubeadmRunOptions } from './kubeadm-runner.js';
export { KubeadmError, runKubeadm } from './kubeadm-runner.js';
export { DEFAULT_KUBERNETES_VERSION } from './kubernetes-version.js';
export type { DiskBindingsOptions } from './disk-binding.js';
export { DiskBindings } from './disk-binding.js';
