// Test-only tools: a logger that keeps entries in memory for assertions. The product never
// imports this entry point.
export type { LogEntry } from './memory-logger.js';
export { MemoryLogger } from './memory-logger.js';
