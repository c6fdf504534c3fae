export { ExitCode } from './exit-code.js';
export { logLevelOption, parseInteger, parsePort } from './option-parsers.js';
export type { ProgramIo } from './run-program.js';
export { runProgram } from './run-program.js';
export { NotBuiltYetError, UsageError } from './usage-error.js';
