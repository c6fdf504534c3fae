import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { createEkCa, manufactureTpm, startSwtpmProcess } from '@constellation/swtpm';
import type { EkCa, ManufacturedTpm, SwtpmProcess } from '@constellation/swtpm';
import { afterAll, beforeAll } from 'vitest';
import { freePortPair } from '@constellation/swtpm';
import { requireProgram } from './run-command.js';
import { createTempDir } from './temp-dir.js';
import type { TempDir } from './temp-dir.js';

export interface SwtpmOptions {
  /** Keep TPM state here (reuse it across restarts); a fresh temp dir by default. */
  stateDir?: string;
  /** Bound for swtpm to start accepting connections. */
  startTimeoutMs?: number;
  /**
   * Manufacture the TPM first (swtpm_setup with `ca`): EK certificates in NV, NV locked. The
   * EK certificates' CN is `vmid` ("swtpm" by default).
   */
  manufacture?: { ca: EkCa; vmid?: string };
}

interface SwtpmCommon {
  readonly stateDir: string;
  /** TCTI string for tpm2-tools (`TPM2TOOLS_TCTI`). */
  readonly tcti: string;
  /** Environment for running tpm2-tools against this TPM. */
  readonly toolEnv: NodeJS.ProcessEnv;
  readonly pid: number;
  /** What manufacturing produced, when the TPM was started with `manufacture`. */
  readonly manufactured: ManufacturedTpm | undefined;
  /** Stops swtpm (SIGTERM, then SIGKILL) and removes a state directory it created. Idempotent. */
  stop(): Promise<void>;
}

/** An swtpm on loopback TCP. */
export interface Swtpm extends SwtpmCommon {
  readonly host: string;
  /** TPM command port (raw TPM 2.0 commands). */
  readonly port: number;
  /** swtpm control port; always port + 1, as tpm2-tools' swtpm TCTI expects. */
  readonly ctrlPort: number;
}

/** An swtpm on owner-only unix sockets, as the product runs it. */
export interface UnixSwtpm extends SwtpmCommon {
  readonly dataSocket: string;
  /** Always `<dataSocket>.ctrl`, where tpm2-tools' swtpm TCTI looks for it. */
  readonly ctrlSocket: string;
}

const running = new Set<number>();
process.once('exit', () => {
  for (const pid of running) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});

/**
 * Starts a real swtpm (TPM 2.0, TCP) on free loopback ports with its own state directory.
 * The TPM is powered on and started (`startup-clear`), so it takes commands at once.
 */
export async function startSwtpm(options: SwtpmOptions = {}): Promise<Swtpm> {
  return withState(options, async (stateDir) => {
    let lastError: unknown;
    for (let attempt = 0; attempt < 5; attempt++) {
      const port = await freePortPair();
      try {
        const host = '127.0.0.1';
        const proc = await startSwtpmProcess({ ...launchOptions(stateDir, options), host, port });
        return { proc, extra: { host, port, ctrlPort: port + 1 } };
      } catch (err) {
        lastError = err; // most likely a port taken between probing and binding: try other ports
      }
    }
    throw new Error('swtpm did not start after 5 attempts', { cause: lastError });
  });
}

/** Starts a real swtpm on unix sockets (mode 0600) inside its state directory. */
export async function startUnixSwtpm(options: SwtpmOptions = {}): Promise<UnixSwtpm> {
  return withState(options, async (stateDir) => {
    const dataSocket = join(stateDir, 'swtpm.sock');
    const ctrlSocket = `${dataSocket}.ctrl`;
    const proc = await startSwtpmProcess({ ...launchOptions(stateDir, options), dataSocket, ctrlSocket });
    return { proc, extra: { dataSocket, ctrlSocket } };
  });
}

/**
 * One EK CA for a whole test file, for `startSwtpm({ manufacture: { ca } })`. Call it at the
 * top of the file (or of a describe block), before the hooks that start TPMs: it registers a
 * beforeAll that creates the CA and an afterAll that removes it, and returns a getter for
 * tests and later hooks.
 */
export function useTestEkCa(): () => EkCa {
  let dir: TempDir | undefined;
  let ca: EkCa | undefined;
  beforeAll(async () => {
    dir = await createTempDir('constellation-ek-ca-');
    ca = await createEkCa(join(dir.path, 'ca'), { name: 'Constellation test' });
  });
  afterAll(async () => {
    await dir?.remove();
  });
  return () => {
    if (ca === undefined) throw new Error('useTestEkCa(): the CA exists only once its beforeAll hook has run');
    return ca;
  };
}

function launchOptions(
  stateDir: string,
  options: SwtpmOptions,
): { stateDir: string; startTimeoutMs: number; logFile: string } {
  return { stateDir, startTimeoutMs: options.startTimeoutMs ?? 10_000, logFile: join(stateDir, 'swtpm.log') };
}

async function withState<E extends object>(
  options: SwtpmOptions,
  launch: (stateDir: string) => Promise<{ proc: SwtpmProcess; extra: E }>,
): Promise<SwtpmCommon & E> {
  await requireProgram('swtpm', 'swtpm');
  const ownDir = options.stateDir === undefined ? await createTempDir('constellation-swtpm-') : undefined;
  const stateDir = options.stateDir ?? (ownDir as { path: string }).path;
  try {
    await mkdir(stateDir, { recursive: true });
    let manufactured: ManufacturedTpm | undefined;
    if (options.manufacture !== undefined) {
      await requireProgram('swtpm_setup', 'swtpm-tools');
      manufactured = await manufactureTpm({
        stateDir,
        vmid: options.manufacture.vmid ?? 'swtpm',
        ca: options.manufacture.ca,
      });
    }
    const { proc, extra } = await launch(stateDir);
    running.add(proc.pid);
    const tcti = proc.tcti ?? '';
    let stopped: Promise<void> | undefined;
    const stop = (): Promise<void> =>
      (stopped ??= (async () => {
        await proc.stop();
        running.delete(proc.pid);
        await ownDir?.remove();
      })());
    return {
      ...extra,
      stateDir,
      tcti,
      toolEnv: { ...process.env, TPM2TOOLS_TCTI: tcti },
      pid: proc.pid,
      manufactured,
      stop,
    };
  } catch (err) {
    await ownDir?.remove();
    throw err;
  }
}
