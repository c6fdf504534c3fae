export { ProgramFailed, runProgram } from './run-program.js';
export type { RunProgramOptions } from './run-program.js';
export { isRunning, stopProcess } from './process-liveness.js';
export type { StopProcessOptions } from './process-liveness.js';
export { spawnDetached } from './spawn-detached.js';
export type { SpawnDetachedOptions } from './spawn-detached.js';
export { WaitAbandoned, waitUntil } from './bounded-wait.js';
export { inNamespaces } from './in-namespaces.js';
export type { Namespaces } from './in-namespaces.js';
