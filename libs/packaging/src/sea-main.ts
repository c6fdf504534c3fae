// `npm run sea`: one single executable per program into dist/release/.
import { buildExecutable } from './executable.js';
import { EXECUTABLE_PROGRAMS } from './programs.js';
import { defaultReleaseDir } from './release-layout.js';

for (const program of EXECUTABLE_PROGRAMS) {
  process.stdout.write(`${await buildExecutable(program, defaultReleaseDir)}\n`);
}
