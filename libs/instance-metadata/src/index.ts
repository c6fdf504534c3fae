export type { InstanceInfo, MetadataDocument } from './metadata-server.js';
export { MetadataServer } from './metadata-server.js';
