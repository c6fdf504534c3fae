import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdir, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { freePortPair } from './free-port.js';
import { requireProgram } from './run-command.js';
import { createTempDir } from './temp-dir.js';
import { waitFor } from './wait-for.js';

export interface SwtpmOptions {
  /** Keep TPM state here (reuse it across restarts); a fresh temp dir by default. */
  stateDir?: string;
  /** Bound for swtpm to start accepting connections. */
  startTimeoutMs?: number;
}

export interface Swtpm {
  readonly host: string;
  /** TPM command port (raw TPM 2.0 commands). */
  readonly port: number;
  /** swtpm control port; always port + 1, as tpm2-tools' swtpm TCTI expects. */
  readonly ctrlPort: number;
  readonly stateDir: string;
  /** TCTI string for tpm2-tools (`TPM2TOOLS_TCTI`). */
  readonly tcti: string;
  /** Environment for running tpm2-tools against this TPM. */
  readonly toolEnv: NodeJS.ProcessEnv;
  readonly pid: number;
  /** Stops swtpm (SIGTERM, then SIGKILL) and removes a state directory it created. Idempotent. */
  stop(): Promise<void>;
}

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * Starts a real swtpm (TPM 2.0, TCP) on free loopback ports with its own state directory.
 * The TPM is powered on and started (`startup-clear`), so it takes commands at once.
 */
export async function startSwtpm(options: SwtpmOptions = {}): Promise<Swtpm> {
  const program = await requireProgram('swtpm', 'swtpm');
  const ownDir = options.stateDir === undefined ? await createTempDir('constellation-swtpm-') : undefined;
  const stateDir = options.stateDir ?? (ownDir as { path: string }).path;
  await mkdir(stateDir, { recursive: true });
  let lastError: unknown;
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePortPair();
    try {
      return await launch(program, port, stateDir, options.startTimeoutMs ?? 10_000, ownDir?.path);
    } catch (err) {
      lastError = err; // most likely a port taken between probing and binding: try other ports
    }
  }
  if (ownDir !== undefined) await ownDir.remove();
  throw new Error('swtpm did not start after 5 attempts', { cause: lastError });
}

async function launch(
  program: string,
  port: number,
  stateDir: string,
  timeoutMs: number,
  ownDir: string | undefined,
): Promise<Swtpm> {
  const host = '127.0.0.1';
  const child = spawn(
    program,
    [
      'socket',
      '--tpm2',
      '--server',
      `type=tcp,bindaddr=${host},port=${port}`,
      '--ctrl',
      `type=tcp,bindaddr=${host},port=${port + 1}`,
      '--tpmstate',
      `dir=${stateDir}`,
      '--flags',
      'not-need-init,startup-clear',
      '--log',
      `file=${join(stateDir, 'swtpm.log')},level=1`,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  running.add(child);
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  let exited = false;
  const exitPromise = new Promise<void>((resolve) => {
    child.once('exit', () => {
      exited = true;
      running.delete(child);
      resolve();
    });
  });
  const stop = async (): Promise<void> => {
    if (!exited) {
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 2_000);
      await exitPromise;
      clearTimeout(killer);
    }
    if (ownDir !== undefined) await rm(ownDir, { recursive: true, force: true });
  };
  try {
    await waitFor(
      async () => {
        if (exited) throw new Error(`swtpm exited: ${stderr.trim()}`);
        return (await canConnect(host, port)) && (await canConnect(host, port + 1));
      },
      { timeoutMs, intervalMs: 20, description: `swtpm on ${host}:${port}` },
    );
  } catch (err) {
    child.kill('SIGKILL');
    await exitPromise;
    throw err;
  }
  const tcti = `swtpm:host=${host},port=${port}`;
  return {
    host,
    port,
    ctrlPort: port + 1,
    stateDir,
    tcti,
    toolEnv: { ...process.env, TPM2TOOLS_TCTI: tcti },
    pid: child.pid ?? -1,
    stop,
  };
}

function canConnect(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => {
      resolve(false);
    });
  });
}
