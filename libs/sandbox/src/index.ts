export type { KubeStatus } from './kube-api-status.js';
export { KubeApiError } from './kube-api-status.js';
export type { KubeApiServerOptions, RecordedRequest } from './kube-api-server.js';
export { KubeApiServer, RESOURCE_TYPES } from './kube-api-server.js';
export type { KubeObject, ResourceType } from './kube-object-store.js';
export { KubeObjectStore } from './kube-object-store.js';
export type { InstanceInfo, MetadataDocument } from './metadata-server.js';
export { MetadataServer } from './metadata-server.js';
export { stopApiServer } from './kubeadm-standin/api-server-process.js';
export { standinPaths } from './kubeadm-standin/paths.js';
export type { KubeApiAuthentication } from './kube-api/access-control.js';
export type { ServiceAccountCredentialSpec, StaticToken } from './kube-api/static-token-file.js';
export {
  mintServiceAccountCredential,
  parseTokenAuthFile,
  readTokenAuthFile,
  serviceAccountUser,
} from './kube-api/static-token-file.js';
export type { UserInfo } from './kube-api/request-attributes.js';
export { JOIN_SERVICE_ACCOUNT, JOIN_SERVICE_USER } from './kube-api/authorization-rules.js';
