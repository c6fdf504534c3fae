import { runProgram } from '@constellation/command-line';
import { createProgram } from './program.js';

process.exitCode = await runProgram(createProgram(), process.argv);
