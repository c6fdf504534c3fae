export { NodeLock, isNodeMarked } from './node-lock.js';
