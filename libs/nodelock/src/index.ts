export { CLUSTER_ID_PCR, NodeLock, isNodeMarked } from './node-lock.js';
