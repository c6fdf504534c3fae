export type { InstanceInfo, MetadataDocument } from './metadata-server.js';
export { MetadataServer } from './metadata-server.js';
export { stopApiServer } from './kubeadm-standin/control-plane-stop.js';
export { standinPaths } from './kubeadm-standin/paths.js';
export { BIN_DIR_ENV, NETNS_ENV } from './kubeadm-standin/standin-env.js';
