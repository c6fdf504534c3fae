import { readFileSync } from 'node:fs';

/**
 * Whether a process with this pid runs: signal 0 checks without sending anything (EPERM: it runs,
 * as another user). A killed daemon whose new parent (PID 1 in a container) does not reap it
 * lingers as a zombie: gone, for every caller here.
 */
export function isRunning(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    const stat = readFileSync(`/proc/${String(pid)}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

export interface StopProcessOptions {
  /**
   * Signal the process's whole group (`-pid`: a detached program and what it started), falling
   * back to the pid alone. Its members are signalled even when the leader is already gone.
   */
  processGroup?: boolean;
}

/** Sends `signal`; false when there was nothing to send it to. */
function send(pid: number, signal: NodeJS.Signals, processGroup: boolean): boolean {
  for (const target of processGroup ? [-pid, pid] : [pid]) {
    try {
      process.kill(target, signal);
      return true;
    } catch {
      // not there: try the next target, if any
    }
  }
  return false;
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone (or was killed). */
export async function stopProcess(pid: number, graceMs = 5_000, options: StopProcessOptions = {}): Promise<void> {
  const processGroup = options.processGroup === true;
  if (!processGroup && !isRunning(pid)) return;
  if (!send(pid, 'SIGTERM', processGroup)) return;
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!isRunning(pid)) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  send(pid, 'SIGKILL', processGroup);
}
