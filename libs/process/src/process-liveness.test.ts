import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { isRunning, stopProcess } from './process-liveness.js';
import { spawnDetached } from './spawn-detached.js';
import { waitUntil } from './bounded-wait.js';

// This package sits below @constellation/testing (which starts programs with it): its own temp directory.
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'constellation-process-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

describe('isRunning', () => {
  it('is true for a running process, false for nonsense pids', () => {
    expect(isRunning(process.pid)).toBe(true);
    for (const pid of [0, -1, 1.5, Number.NaN]) expect(isRunning(pid), String(pid)).toBe(false);
  });

  it('counts a zombie (exited, not yet reaped by its parent) as gone', async () => {
    // A child that exits while its parent (a shell) sleeps without waiting for it.
    const parent = spawn('sh', ['-c', 'sh -c "exit 0" & echo $!; exec sleep 30'], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    try {
      const pid = await new Promise<number>((resolve) =>
        parent.stdout.once('data', (d: Buffer) => {
          resolve(Number(d));
        }),
      );
      await waitUntil(
        async () =>
          (await import('node:fs/promises'))
            .readFile(`/proc/${String(pid)}/stat`, 'utf8')
            .then((s) => (s.includes(') Z ') ? true : undefined)),
        {
          timeoutMs: 5_000,
          what: 'the child to become a zombie',
        },
      );
      expect(isRunning(pid)).toBe(false);
    } finally {
      parent.kill('SIGKILL');
    }
  });
});

describe('spawnDetached and stopProcess', () => {
  it('starts a program with its log, and stops it', async () => {
    const dir = await tempDir();
    const pid = await spawnDetached('sh', ['-c', 'echo started; exec sleep 30'], join(dir, 'log'));
    expect(isRunning(pid)).toBe(true);
    await stopProcess(pid, 2_000);
    await waitUntil(() => Promise.resolve(isRunning(pid) ? undefined : true), {
      timeoutMs: 5_000,
      what: 'sleep to stop',
    });
    const log = await readFile(join(dir, 'log'), 'utf8');
    expect(log).toBe('started\n');
  });

  it('stops a detached program and what it started when asked to stop its process group', async () => {
    const dir = await tempDir();
    // A shell that starts a sleep and waits for it: the sleep is in the shell's process group.
    const pidFile = join(dir, 'child.pid');
    const pid = await spawnDetached('sh', ['-c', `sleep 30 & echo $! > ${pidFile}; wait`], join(dir, 'log'));
    const child = await waitUntil(
      async () => Number((await readFile(pidFile, 'utf8').catch(() => '')).trim()) || undefined,
      { timeoutMs: 5_000, what: 'the shell to start its child' },
    );
    expect(isRunning(child)).toBe(true);
    await stopProcess(pid, 2_000, { processGroup: true });
    await waitUntil(() => Promise.resolve(isRunning(pid) || isRunning(child) ? undefined : true), {
      timeoutMs: 5_000,
      what: 'the shell and its child to stop',
    });
  });

  it('rejects, naming the program, when it cannot start', async () => {
    const dir = await tempDir();
    await expect(
      spawnDetached('/nonexistent/program', [], join(dir, 'log'), { name: 'the metadata server' }),
    ).rejects.toThrow('cannot start the metadata server: spawn /nonexistent/program ENOENT');
  });
});
