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
