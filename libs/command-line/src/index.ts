export { ExitCode } from './exit-code.js';
export { logLevelOption, parseInteger, parsePort } from './option-parsers.js';

export { runProgram, startProgram } from './run-program.js';
export { readOptionFile } from './option-file.js';
export { UsageError } from './usage-error.js';
export { terminalSafe } from './terminal-safe.js';
