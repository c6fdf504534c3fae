export type { KdfCost, StateDiskOptions } from './state-disk.js';
export { StateDisk, StateDiskError } from './state-disk.js';
