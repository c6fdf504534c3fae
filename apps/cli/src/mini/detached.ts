import { spawn } from 'node:child_process';
import { open } from 'node:fs/promises';

/** Starts a program that outlives `mini up`; its output goes to `logFile`. Returns its pid. */
export async function spawnDetached(
  program: string,
  args: readonly string[],
  logFile: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  const log = await open(logFile, 'a', 0o600);
  try {
    const child = spawn(program, args, { detached: true, stdio: ['ignore', log.fd, log.fd], env });
    const pid = await new Promise<number>((resolve, reject) => {
      child.once('spawn', () => {
        resolve(child.pid ?? -1);
      });
      child.once('error', reject);
    });
    child.unref();
    return pid;
  } finally {
    await log.close();
  }
}
