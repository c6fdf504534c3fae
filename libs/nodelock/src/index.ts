export { CLUSTER_ID_PCR, NodeLock, isNodeMarked } from './node-lock.js';
export { openNodeEventLog } from './node-event-log.js';
export type { EventLogLogger, NodeEventLog } from './node-event-log.js';
export { RuntimeEventLog } from './runtime-event-log.js';
