export type { NodeEnvironment, NodeEnvironmentOptions } from './node-environment.js';
export {
  bootNode,
  createNodeEnvironment,
  destroyNode,
  nodeProcesses,
  readNodeEnvironment,
  resetForBoot,
  runInNode,
  shutdownNode,
  startUnit,
  unitLog,
  unitState,
} from './node-environment.js';
export type { HostView } from './mount-namespace.js';
export type { NodeLayout } from './node-layout.js';
export { nodeLayout } from './node-layout.js';
export type { UnitSpec, UnitsFile } from './unit.js';
export { IGNORED_PREFLIGHT_CHECKS } from './kubelet-tuning.js';
export { UnitRunner, runUnits } from './unit-runner.js';
export { systemctl } from './systemctl.js';
export type { MiniNetwork, NodeNetwork } from './node-network.js';
export { createNetwork, destroyNetwork, inNode } from './node-network.js';
export { nodeProgramCommands } from './node-programs.js';
export type { ImageRegistry, ImageRegistryOptions } from './image-registry.js';
export type { Descriptor, RegistryImage } from './image-store.js';
export { startImageRegistry } from './image-registry.js';
export { readArchiveManifest } from './image-store.js';
export { cniConfig, registryMirrorHosts } from './containerd-config.js';
export { CNI_BIN_DIR, POD_NETWORK, peerPodRoutes, podSubnet } from './pod-network.js';
