// Parse and replay of the largest real TCG event log in testdata/eventlogs (gdc-host.bin: every
// event of every bank), in-process, next to tpm2_eventlog reading the same file as a process
// (the goal: at least 20x faster). Prints medians; never asserts.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseEventLog, replayEventLog } from '@constellation/eventlog';
import { repoRoot, runChecked } from '@constellation/testing';
import { printTimings, time } from './timing.js';

const RUNS_OURS = Number(process.env['BENCH_RUNS'] ?? 500);
const RUNS_TOOLS = Math.max(10, Math.floor(RUNS_OURS / 25));
const file = join(repoRoot(), 'testdata', 'eventlogs', 'gdc-host.bin');
const bytes = await readFile(file);

const ours = await time(`ours: parse + replay, in-process (${bytes.length} bytes)`, RUNS_OURS, () => {
  replayEventLog(parseEventLog(bytes));
  return Promise.resolve();
});
const tools = await time('anchor: tpm2_eventlog, as a process', RUNS_TOOLS, () =>
  runChecked('tpm2_eventlog', [file], { timeoutMs: 30_000 }),
);
printTimings('TCG event log: parse and replay of gdc-host.bin', [ours, tools]);
console.log(`tpm2_eventlog / ours: ${(tools.medianMs / ours.medianMs).toFixed(1)}x (goal >= 20x)`);
