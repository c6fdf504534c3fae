export type { KubernetesProgram, KubernetesPrograms } from './kubernetes-programs.js';
export { KUBERNETES_PROGRAMS, locateKubernetesPrograms } from './kubernetes-programs.js';
export type { NetworkNamespace } from './network-namespace.js';
export { createNetworkNamespace, deleteNetworkNamespace, inNetworkNamespace } from './network-namespace.js';
export type { ControlPlane, ControlPlaneOptions } from './control-plane.js';
export { API_SERVER_PORT, startControlPlane, stopControlPlaneIn } from './control-plane.js';
export type { ManagedProcess } from './managed-process.js';
export { ProgramFailed, runProgram } from './run-program.js';
export { relocateHostPaths, staticPodCommand } from './static-pod-command.js';
