import { performance } from 'node:perf_hooks';

export interface Timing {
  label: string;
  runs: number;
  medianMs: number;
  p90Ms: number;
}

/** Runs `fn` `runs` times after `warmup` untimed runs and returns the median and p90 in milliseconds. */
export async function time(label: string, runs: number, fn: () => Promise<unknown>, warmup = 3): Promise<Timing> {
  for (let i = 0; i < warmup; i++) await fn();
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    await fn();
    samples.push(performance.now() - start);
  }
  samples.sort((a, b) => a - b);
  const at = (q: number): number => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))] ?? Number.NaN;
  return { label, runs, medianMs: at(0.5), p90Ms: at(0.9) };
}

/** Prints timings as an aligned table. */
export function printTimings(title: string, timings: readonly Timing[]): void {
  const width = Math.max(...timings.map((t) => t.label.length));
  console.log(`\n${title}`);
  console.log(`${'what'.padEnd(width)}  ${'runs'.padStart(5)}  ${'median ms'.padStart(10)}  ${'p90 ms'.padStart(8)}`);
  for (const t of timings) {
    console.log(
      `${t.label.padEnd(width)}  ${String(t.runs).padStart(5)}  ${t.medianMs.toFixed(3).padStart(10)}  ${t.p90Ms.toFixed(3).padStart(8)}`,
    );
  }
}
