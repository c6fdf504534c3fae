// `npm run sea`: one single executable per program into dist/release/ (or only those named:
// `sea-main.ts constellation-bootstrapper`). Prints each executable's path.
import { buildExecutable } from './executable.js';
import { EXECUTABLE_PROGRAMS } from './programs.js';
import { defaultReleaseDir } from './release-layout.js';

const names = process.argv.slice(2);
const unknown = names.filter((name) => !EXECUTABLE_PROGRAMS.some((program) => program.command === name));
if (unknown.length > 0) {
  const known = EXECUTABLE_PROGRAMS.map((program) => program.command).join(', ');
  process.stderr.write(`sea: no program named ${unknown.join(', ')}; the programs are ${known}\n`);
  process.exit(2);
}
for (const program of EXECUTABLE_PROGRAMS) {
  if (names.length > 0 && !names.includes(program.command)) continue;
  process.stdout.write(`${await buildExecutable(program, defaultReleaseDir)}\n`);
}
