export type { LogFields, Logger, LogLevel } from './logger.js';
export { noopLogger } from './logger.js';
export type { SerializedError } from './serialize-error.js';
export { serializeError } from './serialize-error.js';
export { REDACTED, sanitizeFields } from './sanitize-fields.js';
export type { LogFormat, WinstonLoggerOptions } from './winston-logger.js';
export { createWinstonLogger } from './winston-logger.js';
export type { GrpcLogging } from './grpc-log-bridge.js';
export { bridgeGrpcLogs } from './grpc-log-bridge.js';
