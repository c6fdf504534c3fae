export { NodeLock, isNodeMarked } from './node-lock.js';
export { RuntimeEventLog } from './runtime-event-log.js';
