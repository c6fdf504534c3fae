export type { KubeStatus } from './kube-api-status.js';
export { KubeApiError } from './kube-api-status.js';
export type { KubeApiServerOptions, RecordedRequest } from './kube-api-server.js';
export { KubeApiServer, RESOURCE_TYPES } from './kube-api-server.js';
export type { KubeObject, ResourceType } from './kube-object-store.js';
export { KubeObjectStore } from './kube-object-store.js';
