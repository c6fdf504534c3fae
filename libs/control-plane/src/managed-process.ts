import { readFile } from 'node:fs/promises';
import { spawnDetached, stopProcess } from '@constellation/process';

/** A program started detached (its own process group), its output in a log file. */
export interface ManagedProcess {
  readonly program: string;
  readonly pid: number;
  readonly logFile: string;
}

/** Starts `command` detached with stdout and stderr appended to `logFile` (mode 0600). */
export async function startManagedProcess(
  program: string,
  command: [string, string[]],
  logFile: string,
): Promise<ManagedProcess> {
  const pid = await spawnDetached(command[0], command[1], logFile, { name: program });
  return { program, pid, logFile };
}

/** The last `lines` lines of a process's log, for an error that says why it failed. */
export async function logTail(logFile: string, lines = 15): Promise<string> {
  const text = await readFile(logFile, 'utf8').catch(() => '');
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}

/**
 * Stops the processes one at a time in the reverse of their order (the last started first): for a
 * control plane, the scheduler and controller-manager before kube-apiserver, and etcd last.
 * kube-apiserver drains its watches before it exits: with its clients still running that took
 * 62 s here, after them 3 s. Each gets SIGTERM (to its process group), then SIGKILL after
 * `graceMs`. Processes already gone are fine.
 */
export async function stopManagedProcesses(
  processes: readonly Pick<ManagedProcess, 'pid'>[],
  graceMs = 10_000,
): Promise<void> {
  for (const p of [...processes].reverse()) await stopProcess(p.pid, graceMs, { processGroup: true });
}
