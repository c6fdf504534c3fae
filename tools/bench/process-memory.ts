import { readFile } from 'node:fs/promises';

/** Resident memory of the processes together (Linux /proc), in MiB; a process gone counts 0. */
export async function rssMiB(pids: readonly number[]): Promise<number> {
  let kib = 0;
  for (const pid of pids) {
    const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
    kib += Number(/^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1] ?? 0);
  }
  return kib / 1024;
}
