import { performance } from 'node:perf_hooks';

export interface Timing {
  label: string;
  runs: number;
  medianMs: number;
  p95Ms: number;
}

export interface TimeOptions {
  /** Untimed runs first (3 by default). */
  warmup?: number;
  /** Untimed preparation before every run, warm-up or timed (for example a session the run consumes). */
  before?: () => Promise<unknown>;
}

/** Runs `fn` `runs` times after the warm-up runs and returns the median and p95 in milliseconds. */
export async function time(
  label: string,
  runs: number,
  fn: () => Promise<unknown>,
  options: TimeOptions = {},
): Promise<Timing> {
  const { warmup = 3, before } = options;
  for (let i = 0; i < warmup; i++) {
    await before?.();
    await fn();
  }
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    await before?.();
    const start = performance.now();
    await fn();
    samples.push(performance.now() - start);
  }
  samples.sort((a, b) => a - b);
  const at = (q: number): number => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))] ?? Number.NaN;
  return { label, runs, medianMs: at(0.5), p95Ms: at(0.95) };
}

/** Prints timings as an aligned table: one row per timing, median and p95 per call. */
export function printTimings(title: string, timings: readonly Timing[]): void {
  const width = Math.max(...timings.map((t) => t.label.length));
  console.log(`\n${title}`);
  console.log(`${'what'.padEnd(width)}  ${'runs'.padStart(5)}  ${'median ms'.padStart(10)}  ${'p95 ms'.padStart(8)}`);
  for (const t of timings) {
    console.log(
      `${t.label.padEnd(width)}  ${String(t.runs).padStart(5)}  ${t.medianMs.toFixed(3).padStart(10)}  ${t.p95Ms.toFixed(3).padStart(8)}`,
    );
  }
}
