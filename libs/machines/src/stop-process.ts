/** Whether a process with this pid runs (signal 0 checks without sending anything). */
export function isRunning(pid: number): boolean {
  if (pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone. */
export async function stopProcess(pid: number, graceMs = 5_000): Promise<void> {
  if (!isRunning(pid)) return;
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return;
  }
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!isRunning(pid)) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}
