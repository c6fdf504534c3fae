// Progress lines on stderr (`[node-image +12 s] …`), durations, and running the build's programs
// with their output kept for the error message.
import { spawn } from 'node:child_process';
import type { SpawnOptions } from 'node:child_process';

const started = Date.now();

/** `90` → `1 min 30 s`, `42.4` → `42 s`. */
export function formatSeconds(s: number): string {
  return s >= 60 ? `${Math.floor(s / 60)} min ${String(Math.round(s % 60)).padStart(2, '0')} s` : `${Math.round(s)} s`;
}

/** Seconds since this process started, one decimal. */
export function elapsed(): string {
  return `${((Date.now() - started) / 1000).toFixed(1)} s`;
}

/** One progress line on stderr, stamped with the seconds since the build started. */
export function progress(line: string): void {
  process.stderr.write(`[node-image +${elapsed()}] ${line}\n`);
}

/**
 * Runs one step with a line when it starts (with its usual duration) and when it ends, and a line
 * every 30 s in between, so a slow step on a busy machine still shows it is alive.
 */
export async function step<T>(label: string, usualSeconds: number, work: () => Promise<T>): Promise<T> {
  const stepStarted = Date.now();
  progress(`${label} (about ${formatSeconds(usualSeconds)})`);
  const tick = setInterval(() => {
    progress(`${label}: ${formatSeconds((Date.now() - stepStarted) / 1000)} so far`);
  }, 30_000);
  try {
    const result = await work();
    progress(`${label}: done in ${formatSeconds((Date.now() - stepStarted) / 1000)}`);
    return result;
  } finally {
    clearInterval(tick);
  }
}

export interface RunOptions extends Pick<SpawnOptions, 'cwd' | 'env'> {
  /** Bytes written to the program's stdin. */
  input?: Buffer | string;
  /** Where its stdout goes (a file descriptor); kept in memory by default. */
  stdoutFd?: number;
  /** Its stderr shown on ours as it comes (progress of a child build) instead of kept for the error. */
  showStderr?: boolean;
}

/**
 * Runs a program; resolves to its stdout (whole) when it exits 0, rejects with the command line and
 * the last 8000 characters of its output otherwise.
 */
export function run(command: string, args: readonly string[], options: RunOptions = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: [
        options.input === undefined ? 'ignore' : 'pipe',
        options.stdoutFd ?? 'pipe',
        options.showStderr === true ? 'inherit' : 'pipe',
      ],
    });
    const stdout: Buffer[] = [];
    let tail = '';
    const keep = (chunk: Buffer): void => {
      tail = (tail + chunk.toString()).slice(-8000);
    };
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout.push(chunk);
      keep(chunk);
    });
    child.stderr?.on('data', keep);
    child.once('error', (error) => {
      reject(new Error(`${command} could not start: ${error.message}`));
    });
    child.once('close', (code, signal) => {
      if (code === 0) resolve(Buffer.concat(stdout).toString());
      else {
        const how = code === null ? `was killed by ${signal ?? 'a signal'}` : `exited with ${code}`;
        reject(new Error(`${command} ${args.join(' ')} ${how}:\n${tail.trim()}`));
      }
    });
    if (options.input !== undefined) child.stdin?.end(options.input);
  });
}
