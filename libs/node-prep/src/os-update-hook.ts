import { spawn } from 'node:child_process';

/** The exit code by which the OS update hook says an update is staged and awaits a reboot (as `dnf check-update`'s 100). */
export const OS_UPDATE_STAGED_EXIT_CODE = 100;

const OUTPUT_TAIL_BYTES = 2048;

/** Long enough to download and stage an OS update; a hook that hangs no longer holds the node. */
export const OS_UPDATE_HOOK_TIMEOUT_MS = 30 * 60_000;

/**
 * Runs the OS update hook and reads its answer from the exit code alone: 0 nothing staged,
 * 100 an update staged, anything else a failure. Its output is never interpreted (a hook
 * printing "no update staged" must not reboot the node); a bounded tail is kept for errors. A
 * hook still running after `timeoutMs` is killed and the run fails (the unit retries); without
 * a bound, a hung hook kept the node from ever preparing (red-team note).
 */
export function runOsUpdateHook(
  command: readonly string[],
  timeoutMs = OS_UPDATE_HOOK_TIMEOUT_MS,
): Promise<'staged' | 'none'> {
  const [program = '', ...args] = command;
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    let tail = '';
    const keep = (chunk: Buffer): void => {
      tail = (tail + chunk.toString()).slice(-OUTPUT_TAIL_BYTES);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`OS update hook ${program} cannot run: ${err.message}`));
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (timedOut) reject(new Error(`OS update hook ${command.join(' ')} did not finish within ${timeoutMs} ms`));
      else if (code === 0) resolve('none');
      else if (code === OS_UPDATE_STAGED_EXIT_CODE) resolve('staged');
      else
        reject(
          new Error(
            `OS update hook ${command.join(' ')} ${code === null ? `was killed by ${String(signal)}` : `exited with ${code}`}: ${tail.trim()}`,
          ),
        );
    });
  });
}
