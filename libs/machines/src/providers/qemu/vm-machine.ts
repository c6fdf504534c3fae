import { spawn } from 'node:child_process';
import { open, readFile, rm } from 'node:fs/promises';
import { posix } from 'node:path';
import type { ExecResult, Machine, MachineRecord, ShutdownOptions, UnitStatus } from '../../machine.js';
import { checkMachinePath } from '../../machine-path.js';
import { isRunning, stopProcess } from '@constellation/process';
import { vmBootProgress } from './boot-phase.js';
import type { VmBootProgress } from './boot-phase.js';
import { GuestAgent } from './guest-agent.js';
import { Qmp } from './qmp.js';
import { ensureTap, removeTap } from './tap-device.js';
import { qemuArguments, vmPaths } from './vm-config.js';
import type { VmConfig } from './vm-config.js';

const readPid = async (file: string): Promise<number> =>
  Number((await readFile(file, 'utf8').catch(() => '0')).trim()) || 0;

/** The PATH the guest agent's programs get (it runs them without a login shell). */
const GUEST_PATH = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** Runs a program to its end, bounded, and fails with its stderr. */
async function run(program: string, args: readonly string[], logFile: string, timeoutMs: number): Promise<void> {
  const log = await open(logFile, 'a', 0o600);
  try {
    const child = spawn(program, args, { stdio: ['ignore', log.fd, log.fd] });
    const code = await new Promise<number | null>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`${program} did not finish within ${timeoutMs} ms (log: ${logFile})`));
      }, timeoutMs);
      child.once('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      child.once('exit', (exit) => {
        clearTimeout(timer);
        resolve(exit);
      });
    });
    if (code !== 0) {
      const tail = (await readFile(logFile, 'utf8')).trim().split('\n').slice(-3).join(' | ');
      throw new Error(`${program} exited with ${String(code)}: ${tail}`);
    }
  } finally {
    await log.close();
  }
}

/**
 * A node that is a QEMU virtual machine: OVMF measures its boot into its own swtpm, as firmware
 * does on real hardware; programs and files are reached through the guest agent; power through
 * QEMU's monitor. Its console goes to serial.log in its directory.
 */
export class VmMachine implements Machine {
  readonly record: MachineRecord;
  readonly name: string;
  readonly #paths: ReturnType<typeof vmPaths>;

  constructor(record: MachineRecord) {
    this.record = record;
    this.name = record.name;
    this.#paths = vmPaths(record.dir);
  }

  /** Under software emulation a busy guest's agent has been seen to take 9 s to answer its first sync. */
  async #agent<T>(use: (agent: GuestAgent) => Promise<T>, timeoutMs = 30_000): Promise<T> {
    const agent = await GuestAgent.connect(this.#paths.guestAgent, this.name, timeoutMs);
    try {
      return await use(agent);
    } finally {
      agent.close();
    }
  }

  exec(command: readonly string[], options: { timeoutMs?: number } = {}): Promise<ExecResult> {
    return this.#agent((agent) => agent.exec(command, [GUEST_PATH, 'HOME=/root'], options.timeoutMs ?? 60_000));
  }

  readFile(path: string): Promise<Buffer | undefined> {
    checkMachinePath(path, this.name);
    return this.#agent((agent) => agent.readFile(path));
  }

  async writeFile(path: string, data: string | Uint8Array, options: { mode?: number } = {}): Promise<void> {
    checkMachinePath(path, this.name);
    const bytes = typeof data === 'string' ? Buffer.from(data) : data;
    const temporary = `${path}.tmp-${process.pid}`;
    await this.exec(['mkdir', '-p', posix.dirname(path)]);
    await this.#agent((agent) => agent.writeFile(temporary, bytes));
    await this.exec(['chmod', (options.mode ?? 0o644).toString(8), temporary]);
    await this.exec(['mv', '-f', temporary, path]);
  }

  async remove(path: string): Promise<void> {
    checkMachinePath(path, this.name);
    await this.exec(['rm', '-rf', '--', path]);
  }

  async copyIn(hostPath: string, path: string): Promise<void> {
    await this.writeFile(path, await readFile(hostPath), { mode: 0o600 });
  }

  async #config(): Promise<VmConfig> {
    return JSON.parse(await readFile(this.#paths.config, 'utf8')) as VmConfig;
  }

  /**
   * Power on: a fresh swtpm process on the VM's TPM state (its PCRs start at reset values, and OVMF
   * sends TPM2_Startup), then QEMU. Returns once QEMU runs; the guest boots on its own.
   */
  async boot(): Promise<void> {
    if (isRunning(await readPid(this.#paths.qemuPid))) throw new Error(`${this.name} is running already`);
    await rm(this.#paths.tpmControl, { force: true });
    await run(
      'swtpm',
      [
        'socket',
        '--tpm2',
        '--tpmstate',
        `dir=${this.#paths.tpmDir}`,
        '--ctrl',
        `type=unixio,path=${this.#paths.tpmControl},mode=0600`,
        '--log',
        `file=${this.#paths.tpmLog},level=1`,
        '--pid',
        `file=${this.#paths.tpmPid}`,
        '--daemon',
        '--terminate',
      ],
      this.#paths.tpmLog,
      10_000,
    );
    const config = await this.#config();
    if (config.network !== undefined) await ensureTap(config.network.tap, config.network.bridge);
    await run('qemu-system-x86_64', qemuArguments(this.record.dir, config), this.#paths.qemuLog, 60_000);
  }

  /** Power button, then power cut if the guest has not stopped within `graceMs`. */
  async poweredOn(): Promise<boolean> {
    return isRunning(await readPid(this.#paths.qemuPid));
  }

  async shutdown(options: ShutdownOptions = {}): Promise<void> {
    const qemu = await readPid(this.#paths.qemuPid);
    if (isRunning(qemu) && options.powerLoss !== true) {
      const qmp = await Qmp.connect(this.#paths.qmp).catch(() => undefined);
      await qmp?.powerButton().catch(() => undefined);
      qmp?.close();
      const deadline = Date.now() + (options.graceMs ?? 90_000);
      while (isRunning(qemu) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 250));
      await this.#powerCut();
    }
    await stopProcess(await readPid(this.#paths.tpmPid));
  }

  async #powerCut(): Promise<void> {
    const qemu = await readPid(this.#paths.qemuPid);
    if (!isRunning(qemu)) return;
    const qmp = await Qmp.connect(this.#paths.qmp, 2_000).catch(() => undefined);
    await qmp?.quit();
    qmp?.close();
    await stopProcess(qemu, 5_000);
  }

  async destroy(): Promise<void> {
    await this.#powerCut();
    await stopProcess(await readPid(this.#paths.tpmPid));
    const tap = (await this.#config().catch(() => undefined))?.network?.tap;
    if (tap !== undefined) await removeTap(tap);
  }

  /** How far the boot has come, from the serial console. */
  async bootProgress(): Promise<VmBootProgress> {
    return vmBootProgress(await readFile(this.#paths.serialLog, 'utf8').catch(() => ''));
  }

  async unitState(unit: string): Promise<UnitStatus | undefined> {
    const shown = await this.exec(['systemctl', 'show', '--property=ActiveState,Result', '--', unit], {
      timeoutMs: 10_000,
    }).catch(() => undefined);
    if (shown === undefined) return undefined;
    const fields = new Map(
      shown.stdout
        .trim()
        .split('\n')
        .map((line) => line.split('=', 2) as [string, string]),
    );
    const result = fields.get('Result');
    return {
      state: fields.get('ActiveState') ?? 'unknown',
      ...(result === undefined || result === 'success' ? {} : { lastExit: result }),
    };
  }

  /** The VM's console: the image sends the journal there (every unit's lines, the kernel's and the initrd's). */
  logPath(): string {
    return this.#paths.serialLog;
  }

  async hostProcesses(): Promise<number[]> {
    const pids = [await readPid(this.#paths.qemuPid), await readPid(this.#paths.tpmPid)];
    return pids.filter(isRunning);
  }

  /** QEMU's run state (running, paused, shutdown, internal-error), or undefined when QEMU is not running. */
  async runState(): Promise<string | undefined> {
    if (!isRunning(await readPid(this.#paths.qemuPid))) return undefined;
    const qmp = await Qmp.connect(this.#paths.qmp, 2_000);
    try {
      return await qmp.status();
    } finally {
      qmp.close();
    }
  }
}
