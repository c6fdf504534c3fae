// `npm run bench`: each program as a single executable next to its .mjs bundle (which needs a
// Node.js beside it): size on disk and time to print --help (start-up, no work). Prints medians.
import { spawn } from 'node:child_process';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { buildExecutable } from './executable.js';
import { EXECUTABLE_PROGRAMS, bundleScript, entryPoint } from './programs.js';
import { repoRoot } from './release-layout.js';
import { runTool } from './run-tool.js';

const RUNS = Number(process.env['BENCH_RUNS'] ?? 10);
const outDir = join(repoRoot, '.tmp', 'bench', 'executables');

async function startMs(program: string, args: readonly string[]): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < RUNS + 2; i++) {
    const started = performance.now();
    await new Promise<void>((resolve, reject) => {
      const child = spawn(program, [...args, '--help'], { stdio: 'ignore' });
      child.once('error', reject);
      child.once('exit', (code) => {
        if (code === 0) resolve();
        else reject(new Error(`${program} ${args.join(' ')} --help exited with ${String(code)}`));
      });
    });
    // The first two are warm-up (page cache).
    if (i >= 2) samples.push(performance.now() - started);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)] ?? Number.NaN;
}

const mib = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
const nodeBytes = (await stat(process.execPath)).size;
process.stdout.write(
  `single executables vs .mjs bundles (median of ${RUNS} starts to --help; the bundle also needs node, ${mib(nodeBytes)})\n`,
);
for (const program of EXECUTABLE_PROGRAMS) {
  const bundle = join(outDir, `${program.command}.mjs`);
  await runTool(process.execPath, [bundleScript, entryPoint(program), bundle]);
  const executable = await buildExecutable(program, outDir);
  const bundleStart = await startMs(process.execPath, [bundle]);
  const executableStart = await startMs(executable, []);
  process.stdout.write(
    `${program.command.padEnd(28)} .mjs ${mib((await stat(bundle)).size).padStart(9)} ${bundleStart.toFixed(0).padStart(5)} ms` +
      `   executable ${mib((await stat(executable)).size).padStart(9)} ${executableStart.toFixed(0).padStart(5)} ms\n`,
  );
}
