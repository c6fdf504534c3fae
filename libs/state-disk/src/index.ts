export { StateDisk } from './state-disk.js';
