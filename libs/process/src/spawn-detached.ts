import { spawn } from 'node:child_process';
import { open } from 'node:fs/promises';

export interface SpawnDetachedOptions {
  env?: NodeJS.ProcessEnv;
  /** What the program is called in the error when it cannot start (default: its path). */
  name?: string;
}

/**
 * Starts a program that outlives its starter: its own process group, no stdin, stdout and stderr
 * appended to `logFile` (created mode 0600). Resolves to its pid once it runs; rejects, naming
 * it, when it cannot start.
 */
export async function spawnDetached(
  program: string,
  args: readonly string[],
  logFile: string,
  options: SpawnDetachedOptions = {},
): Promise<number> {
  const log = await open(logFile, 'a', 0o600);
  try {
    const child = spawn(program, args, {
      detached: true,
      stdio: ['ignore', log.fd, log.fd],
      env: options.env ?? process.env,
    });
    const pid = await new Promise<number>((resolve, reject) => {
      child.once('spawn', () => {
        resolve(child.pid ?? -1);
      });
      child.once('error', (error) => {
        reject(new Error(`cannot start ${options.name ?? program}: ${error.message}`, { cause: error }));
      });
    });
    child.unref();
    return pid;
  } finally {
    await log.close();
  }
}
