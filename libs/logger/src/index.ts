export type { Logger } from './logger.js';
export { noopLogger } from './logger.js';

export type { LogFormat, StreamLoggerOptions } from './stream-logger.js';
export { createLogger } from './stream-logger.js';

export { bridgeGrpcLogs } from './grpc-log-bridge.js';
