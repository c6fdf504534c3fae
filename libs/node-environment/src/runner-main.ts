// A node's unit runner as a program of its own (`node dist/runner-main.js <units-file>`), for the
// tests' machines; mini runs the same function through its CLI (`constellation mini node-runner`).
import { runUnits } from './unit-runner.js';

const unitsFile = process.argv[2];
if (unitsFile === undefined) {
  process.stderr.write('usage: runner-main.js <units-file>\n');
  process.exit(2);
}
await runUnits(unitsFile);
