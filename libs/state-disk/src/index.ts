export { StateDisk, diskKeyCheck } from './state-disk.js';
