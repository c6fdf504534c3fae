export type { BootstrapToken } from './bootstrap-token.js';
export { BOOTSTRAP_TOKEN_PATTERN, bootstrapTokenSecret, bootstrapTokenSecretName } from './bootstrap-token.js';
export type { ApiServerAltNames } from './api-server-alt-names.js';
export {
  DEFAULT_DNS_DOMAIN,
  DEFAULT_SERVICE_SUBNET,
  apiServerAltNames,
  isKubernetesServiceName,
  kubernetesServiceAddress,
} from './api-server-alt-names.js';
export type { ClusterConfig } from './cluster-config.js';
export { clusterConfigMap, parseClusterConfig, readClusterConfig } from './cluster-config.js';
export { deleteUnmintedBootstrapTokens } from './init-bootstrap-token.js';
export type { InitConfigInput, JoinConfigInput, KubeadmNodeOptions } from './kubeadm-config.js';
export { CRI_SOCKET, initConfiguration, joinConfiguration } from './kubeadm-config.js';
export {
  ADMISSION_CONFIG_DIR,
  ADMISSION_CONFIG_FILE,
  admissionConfiguration,
  writeAdmissionConfiguration,
} from './pod-security-admission.js';
export type { KubeProxyFields } from './kube-proxy-config.js';
export { KUBE_PROXY_API, KUBE_PROXY_KIND, parseKubeProxyConfiguration } from './kube-proxy-config.js';
export { KUBELET_CERT_DIR, KUBELET_SERVING_CERT_FILE, KUBELET_SERVING_KEY_FILE } from './kubelet-paths.js';

export { runKubeadm } from './kubeadm-runner.js';
export {
  DEFAULT_KUBERNETES_VERSION,
  SUPPORTED_KUBERNETES_MINORS,
  unsupportedKubernetesVersion,
} from './kubernetes-version.js';

export { apiStatusCode } from './api-status-code.js';
export { apiErrorMessage } from './api-error-message.js';
export type { PooledApiOptions } from './pooled-api-clients.js';
export { pooledApiConfiguration } from './pooled-api-clients.js';
export { DiskBindings, diskBindingName } from './disk-binding.js';
export { NodeNameBindings, machineNameBindingName, nodeNameBindingName } from './node-name-binding.js';
export type { CheckedAddresses } from './node-address-binding.js';
export { NodeAddressBindings, nodeAddressBindingName } from './node-address-binding.js';
export { canonicalAddress, canonicalAddressOrUndefined } from './canonical-address.js';
export { NODE_CLIENT_BOOTSTRAP_BINDINGS, removeNodeClientBootstrapGrants } from './node-bootstrap-grants.js';
export type { DiscoveryCredentials } from './discovery-kubeconfig.js';
export { discoveryKubeconfig } from './discovery-kubeconfig.js';
