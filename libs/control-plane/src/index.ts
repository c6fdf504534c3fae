export type { NetworkNamespace } from './network-namespace.js';
export { createNetworkNamespace, deleteNetworkNamespace, inNetworkNamespace } from './network-namespace.js';
export type { ControlPlane, ControlPlaneOptions } from './control-plane.js';
export { API_SERVER_PORT, startControlPlane, stopControlPlaneIn } from './control-plane.js';
export type { ManagedProcess } from './managed-process.js';
export { relocateHostPaths, staticPodCommand } from './static-pod-command.js';
export type { IsolatedControlPlane } from './isolated-control-plane.js';
export { startIsolatedControlPlane } from './isolated-control-plane.js';
