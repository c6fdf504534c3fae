export { KubeApiServer } from './kube-api-server.js';

export type { InstanceInfo, MetadataDocument } from './metadata-server.js';
export { MetadataServer } from './metadata-server.js';
export { stopApiServer } from './kubeadm-standin/api-server-process.js';
export { standinPaths } from './kubeadm-standin/paths.js';

export { mintServiceAccountCredential } from './kube-api/static-token-file.js';
