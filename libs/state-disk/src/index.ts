export { StateDisk, diskKeyCheck } from './state-disk.js';
export { mountStateDisk } from './state-mount.js';
export type { StateMountOptions } from './state-mount.js';
