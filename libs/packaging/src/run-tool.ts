import { spawn } from 'node:child_process';

export interface ToolOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Killed after this long; a build step that hangs fails the build instead. */
  timeoutMs?: number;
}

/**
 * Runs one build tool without a shell and returns its stdout; a non-zero exit rejects with the
 * tool's stderr, so a failed step says what failed.
 */
export async function runTool(program: string, args: readonly string[], options: ToolOptions = {}): Promise<string> {
  const timeoutMs = options.timeoutMs ?? 600_000;
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`${program}: ${err.message}`));
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      const out = Buffer.concat(stdout).toString('utf8');
      if (code === 0) {
        resolve(out);
        return;
      }
      const why = signal === 'SIGKILL' ? `was killed after ${timeoutMs} ms` : `exited with ${String(code ?? signal)}`;
      const err = Buffer.concat(stderr).toString('utf8').trim();
      reject(new Error(`${program} ${args.join(' ')} ${why}${err === '' ? '' : `: ${err}`}`));
    });
  });
}
