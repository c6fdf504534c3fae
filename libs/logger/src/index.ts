export type { Logger } from './logger.js';
export { noopLogger } from './logger.js';

export { createWinstonLogger } from './winston-logger.js';

export { bridgeGrpcLogs } from './grpc-log-bridge.js';
