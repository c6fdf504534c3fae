import { spawn } from 'node:child_process';
import { lstat, mkdir, readFile, rm } from 'node:fs/promises';
import type { NetConnectOpts } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { canConnect } from './can-connect.js';
import { requireProgram, SwtpmToolError } from './programs.js';
import { isRunning } from '@constellation/process';

/** swtpm's channels on unix sockets (mode 0600): only the owner can talk to, reset or clone the TPM. */
export interface UnixListen {
  dataSocket: string;
  /** Control socket; `<dataSocket>.ctrl` by default, where tpm2-tools' swtpm TCTI looks for it. */
  ctrlSocket?: string;
}

/** swtpm's channels on TCP: anyone who reaches the control port can reset or clone the TPM. */
export interface TcpListen {
  host: string;
  port: number;
  /** `port + 1` by default, which tpm2-tools' swtpm TCTI expects. */
  ctrlPort?: number;
}

export type SwtpmProcessOptions = (UnixListen | TcpListen) & {
  stateDir: string;
  /** Detach (`--daemon`): swtpm outlives this process. Needs `pidFile`. */
  daemon?: boolean;
  pidFile?: string;
  /** swtpm's log (level 1); none by default. */
  logFile?: string;
  /** Bound for swtpm to accept connections. */
  startTimeoutMs?: number;
};

/** Where a running swtpm listens. */
export type SwtpmEndpoints =
  | { kind: 'unix'; dataSocket: string; ctrlSocket: string }
  | { kind: 'tcp'; host: string; port: number; ctrlPort: number };

export interface SwtpmProcess {
  readonly pid: number;
  readonly endpoints: SwtpmEndpoints;
  /**
   * TCTI string for tpm2-tools (`TPM2TOOLS_TCTI`), or undefined when the control channel is
   * not where the swtpm TCTI looks (`<dataSocket>.ctrl`, or `port + 1`).
   */
  readonly tcti: string | undefined;
  /** Resolves when swtpm has exited. */
  readonly exited: Promise<void>;
  /** SIGTERM, then SIGKILL after a bound; resolves once swtpm is gone. Idempotent. */
  stop(): Promise<void>;
}

/** Unix socket paths longer than this do not fit sockaddr_un (108 bytes including the NUL). */
const MAX_SOCKET_PATH = 107;
const STOP_GRACE_MS = 2_000;

/**
 * Starts `swtpm socket --tpm2` on unix sockets (or TCP), powered on and started
 * (`not-need-init,startup-clear`), and waits, bounded, until it accepts connections.
 */
export async function startSwtpmProcess(options: SwtpmProcessOptions): Promise<SwtpmProcess> {
  const program = await requireProgram('swtpm');
  const stateDir = resolve(options.stateDir);
  await mkdir(stateDir, { recursive: true, mode: 0o700 });
  const endpoints = await prepareEndpoints(options);
  const args = ['socket', '--tpm2', ...channelArgs(endpoints)];
  args.push('--tpmstate', `dir=${stateDir}`, '--flags', 'not-need-init,startup-clear');
  if (options.logFile !== undefined) args.push('--log', `file=${resolve(options.logFile)},level=1`);
  if (options.daemon === true) {
    if (options.pidFile === undefined) throw new RangeError('startSwtpmProcess: daemon mode needs a pidFile');
    args.push('--daemon');
  }
  if (options.pidFile !== undefined) {
    await rm(options.pidFile, { force: true });
    args.push('--pid', `file=${resolve(options.pidFile)}`);
  }
  const child = spawn(program, args, { stdio: ['ignore', 'ignore', 'pipe'], detached: options.daemon === true });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  // Mutated by the child's events; an object so the compiler does not narrow it to its initial value.
  const childState = { exited: false, code: null as number | null };
  const childExit = new Promise<void>((resolveExit) => {
    child.once('error', (err) => {
      stderr += err.message;
      childState.exited = true;
      resolveExit();
    });
    child.once('exit', (code) => {
      childState.exited = true;
      childState.code = code;
      resolveExit();
    });
  });
  const timeoutMs = options.startTimeoutMs ?? 10_000;
  const deadline = Date.now() + timeoutMs;
  let pid: number;
  if (options.daemon === true && options.pidFile !== undefined) {
    // The foreground process exits once the daemon has forked and written its pid file.
    await boundedWait(childExit, deadline, 'swtpm to daemonise');
    if (childState.code !== 0)
      throw new SwtpmToolError('swtpm', `swtpm exited with ${String(childState.code)}: ${stderr.trim()}`);
    // The daemon may hold our stderr pipe open; let go of it and of the child.
    child.stderr.destroy();
    child.unref();
    pid = Number((await readFile(options.pidFile, 'utf8')).trim());
    if (!Number.isInteger(pid) || pid <= 0) throw new SwtpmToolError('swtpm', `bad pid file ${options.pidFile}`);
  } else {
    pid = child.pid ?? -1;
  }
  const isAlive = (): boolean => (options.daemon === true ? isRunning(pid) : !childState.exited);
  let gone: Promise<void> | undefined;
  // A daemon is not our child (its foreground parent exits at once): its exit is observed by
  // polling, started only when asked for. Sockets are removed only once swtpm is really gone.
  const exited = (): Promise<void> =>
    (gone ??= (options.daemon === true ? pollUntilGone(pid) : childExit).then(() => removeSockets(endpoints)));
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      if (isAlive()) {
        signal(pid, 'SIGTERM');
        const killer = setTimeout(() => {
          signal(pid, 'SIGKILL');
        }, STOP_GRACE_MS);
        await exited();
        clearTimeout(killer);
      }
      await removeSockets(endpoints);
    })();
    return stopping;
  };
  try {
    for (;;) {
      if (!isAlive()) throw new SwtpmToolError('swtpm', `swtpm exited during start: ${stderr.trim() || '(no output)'}`);
      if ((await canConnect(dataAddress(endpoints))) && (await canConnect(ctrlAddress(endpoints)))) break;
      if (Date.now() >= deadline) {
        throw new SwtpmToolError('swtpm', `swtpm did not accept connections within ${timeoutMs} ms: ${stderr.trim()}`);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  } catch (err) {
    if (isAlive()) signal(pid, 'SIGKILL');
    await exited();
    throw err;
  }
  return {
    pid,
    endpoints,
    tcti: tctiFor(endpoints),
    get exited() {
      return exited();
    },
    stop,
  };
}

async function prepareEndpoints(options: UnixListen | TcpListen): Promise<SwtpmEndpoints> {
  if ('dataSocket' in options) {
    const dataSocket = resolve(options.dataSocket);
    const ctrlSocket = resolve(options.ctrlSocket ?? `${dataSocket}.ctrl`);
    for (const path of [dataSocket, ctrlSocket]) {
      if (Buffer.byteLength(path) > MAX_SOCKET_PATH) {
        throw new RangeError(`unix socket path ${path} is longer than ${MAX_SOCKET_PATH} bytes`);
      }
      await mkdir(dirname(path), { recursive: true, mode: 0o700 });
      // A socket left by a killed swtpm would make the bind fail; anything else is not ours to delete.
      const existing = await lstat(path).catch(() => undefined);
      if (existing?.isSocket() === true) await rm(path);
      else if (existing !== undefined) throw new Error(`${path} exists and is not a socket`);
    }
    return { kind: 'unix', dataSocket, ctrlSocket };
  }
  return { kind: 'tcp', host: options.host, port: options.port, ctrlPort: options.ctrlPort ?? options.port + 1 };
}

function channelArgs(e: SwtpmEndpoints): string[] {
  if (e.kind === 'unix') {
    return [
      '--server',
      `type=unixio,path=${e.dataSocket},mode=0600`,
      '--ctrl',
      `type=unixio,path=${e.ctrlSocket},mode=0600`,
    ];
  }
  return [
    '--server',
    `type=tcp,bindaddr=${e.host},port=${e.port}`,
    '--ctrl',
    `type=tcp,bindaddr=${e.host},port=${e.ctrlPort}`,
  ];
}

function tctiFor(e: SwtpmEndpoints): string | undefined {
  if (e.kind === 'unix') return e.ctrlSocket === `${e.dataSocket}.ctrl` ? `swtpm:path=${e.dataSocket}` : undefined;
  return e.ctrlPort === e.port + 1 ? `swtpm:host=${e.host},port=${e.port}` : undefined;
}

const dataAddress = (e: SwtpmEndpoints): NetConnectOpts =>
  e.kind === 'unix' ? { path: e.dataSocket } : { host: e.host, port: e.port };
const ctrlAddress = (e: SwtpmEndpoints): NetConnectOpts =>
  e.kind === 'unix' ? { path: e.ctrlSocket } : { host: e.host, port: e.ctrlPort };

async function removeSockets(e: SwtpmEndpoints): Promise<void> {
  if (e.kind !== 'unix') return;
  for (const path of [e.dataSocket, e.ctrlSocket]) {
    const existing = await lstat(path).catch(() => undefined);
    if (existing?.isSocket() === true) await rm(path, { force: true });
  }
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // already gone
  }
}

/**
 * For a daemon we did not spawn directly: polls until the pid is gone. The timers are unref'd
 * so that watching a daemon never keeps this process alive; stop() bounds it with SIGKILL.
 */
async function pollUntilGone(pid: number): Promise<void> {
  while (isRunning(pid)) await new Promise((r) => setTimeout(r, 20).unref());
}

async function boundedWait(promise: Promise<void>, deadline: number, what: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_r, reject) => {
    timer = setTimeout(
      () => {
        reject(new SwtpmToolError('swtpm', `timed out waiting for ${what}`));
      },
      Math.max(0, deadline - Date.now()),
    );
  });
  try {
    await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Default socket paths for a TPM kept in `dir`: `<dir>/swtpm.sock` and `<dir>/swtpm.sock.ctrl`. */
export function defaultSockets(dir: string): { dataSocket: string; ctrlSocket: string } {
  const dataSocket = join(resolve(dir), 'swtpm.sock');
  return { dataSocket, ctrlSocket: `${dataSocket}.ctrl` };
}
