import { startProgram } from '@constellation/command-line';
import { createProgram } from './program.js';

startProgram(createProgram());
