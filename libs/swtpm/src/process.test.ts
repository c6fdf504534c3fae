import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSwtpmProcess } from './process.js';
import { runProgram, SwtpmToolError } from './programs.js';
import { errorMessage } from '@constellation/errors';

let root: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'constellation-swtpm-proc-'));
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** Alive and not a zombie (a killed daemon is reparented, and a container's PID 1 may never reap it). */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

describe('startSwtpmProcess', () => {
  it('serves a TPM on owner-only unix sockets that tpm2-tools reaches through its TCTI', async () => {
    const dataSocket = join(root, 'a', 'tpm.sock');
    const started = performance.now();
    const swtpm = await startSwtpmProcess({ stateDir: join(root, 'a', 'state'), dataSocket });
    console.info(`startSwtpmProcess (unix): ${(performance.now() - started).toFixed(0)} ms`);
    try {
      expect(swtpm.endpoints).toEqual({ kind: 'unix', dataSocket, ctrlSocket: `${dataSocket}.ctrl` });
      for (const path of [dataSocket, `${dataSocket}.ctrl`]) {
        const info = await stat(path);
        expect(info.isSocket()).toBe(true);
        expect(info.mode & 0o777).toBe(0o600);
      }
      expect(swtpm.tcti).toBe(`swtpm:path=${dataSocket}`);
      const out = await runProgram('tpm2_getrandom', ['--hex', '8'], {
        timeoutMs: 10_000,
        env: { ...process.env, TPM2TOOLS_TCTI: swtpm.tcti },
      });
      expect(out.stdout).toMatch(/^[0-9a-f]{16}$/);
    } finally {
      await swtpm.stop();
    }
    expect(isRunning(swtpm.pid)).toBe(false);
    expect(existsSync(dataSocket)).toBe(false);
    await swtpm.stop(); // idempotent
  });

  it('runs as a daemon with a pid file and replaces a stale socket left behind', async () => {
    const dir = join(root, 'b');
    const pidFile = join(dir, 'swtpm.pid');
    const dataSocket = join(dir, 'tpm.sock');
    const options = {
      stateDir: join(dir, 'state'),
      dataSocket,
      daemon: true,
      pidFile,
      logFile: join(dir, 'swtpm.log'),
    };
    // A killed daemon leaves its socket files behind.
    const killed = await startSwtpmProcess(options);
    process.kill(killed.pid, 'SIGKILL');
    // (not `killed.exited`: that would tidy the sockets up)
    for (let i = 0; i < 100 && isRunning(killed.pid); i++) await new Promise((r) => setTimeout(r, 20));
    expect(isRunning(killed.pid)).toBe(false);
    expect((await stat(dataSocket)).isSocket()).toBe(true);
    const swtpm = await startSwtpmProcess(options);
    try {
      expect(isRunning(swtpm.pid)).toBe(true);
      expect(swtpm.pid).not.toBe(killed.pid);
      expect(swtpm.pid).not.toBe(process.pid);
    } finally {
      await swtpm.stop();
    }
    expect(isRunning(swtpm.pid)).toBe(false);
  });

  it('serves TCP for tools that need a port, and reports a port already in use', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const address = blocker.address();
    const port = typeof address === 'object' && address !== null ? address.port : 0;
    try {
      const err = await startSwtpmProcess({ stateDir: join(root, 'c'), host: '127.0.0.1', port, startTimeoutMs: 5_000 })
        .then(async (s) => {
          await s.stop();
          return undefined;
        })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SwtpmToolError);
      expect(errorMessage(err)).toMatch(/swtpm exited during start/);
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
    const swtpm = await startSwtpmProcess({ stateDir: join(root, 'c'), host: '127.0.0.1', port });
    try {
      expect(swtpm.tcti).toBe(`swtpm:host=127.0.0.1,port=${port}`);
      const out = await runProgram('tpm2_getrandom', ['--hex', '4'], {
        timeoutMs: 10_000,
        env: { ...process.env, TPM2TOOLS_TCTI: swtpm.tcti },
      });
      expect(out.stdout).toMatch(/^[0-9a-f]{8}$/);
    } finally {
      await swtpm.stop();
    }
  });
});
