import { copyFile, link, mkdir, readFile, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { writeFileAtomic } from '@constellation/files';
import {
  bootNode,
  destroyNode,
  nodeLayout,
  nodeProcesses,
  readNodeEnvironment,
  resetForBoot,
  runInNode,
  shutdownNode,
  unitLog,
  unitState,
} from '@constellation/node-environment';
import type { NodeEnvironment, UnitsFile } from '@constellation/node-environment';
import { isRunning, stopProcess } from '@constellation/process';
import type { ExecResult, Machine, MachineRecord, ShutdownOptions, UnitStatus } from '../../machine.js';
import { checkMachinePath } from '../../machine-path.js';
import { powerOnTpm, readFirmware } from './firmware.js';
import { namespaceMachinePaths } from './namespace-paths.js';

const readPid = async (file: string): Promise<number> =>
  Number((await readFile(file, 'utf8').catch(() => '0')).trim()) || 0;

/**
 * A machine made of this host's namespaces: a network and mount namespace, a cgroup root, a unit
 * runner in systemd's place, a swtpm, and mini's stand-in firmware (see firmware.ts). Its files
 * are below its directory, which is its root as its programs see it.
 */
export class NamespaceMachine implements Machine {
  readonly record: MachineRecord;
  readonly name: string;
  readonly #paths: ReturnType<typeof namespaceMachinePaths>;

  constructor(record: MachineRecord) {
    this.record = record;
    this.name = record.name;
    this.#paths = namespaceMachinePaths(record.dir);
  }

  async #environment(): Promise<NodeEnvironment> {
    const environment = await readNodeEnvironment(this.record.dir);
    if (environment === undefined)
      throw new Error(`${this.name} has no node environment in ${this.record.dir} (it was never created)`);
    return environment;
  }

  /** The host path of one of the node's files; only absolute paths without `..` are the node's. */
  #hostPath(path: string): string {
    checkMachinePath(path, this.name);
    return join(this.#paths.root, path);
  }

  async exec(command: readonly string[], options: { timeoutMs?: number } = {}): Promise<ExecResult> {
    // The node's own PATH (its systemctl and the programs node preparation installed first), as
    // its units have it.
    const units = JSON.parse(await readFile(nodeLayout(this.record.dir).units, 'utf8')) as UnitsFile;
    const env = Object.entries(units.env).map(([key, value]) => `${key}=${value}`);
    return runInNode(await this.#environment(), ['env', ...env, ...command], options.timeoutMs ?? 60_000);
  }

  async readFile(path: string): Promise<Buffer | undefined> {
    return readFile(this.#hostPath(path)).catch((error: unknown) => {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    });
  }

  async writeFile(path: string, data: string | Uint8Array, options: { mode?: number } = {}): Promise<void> {
    const target = this.#hostPath(path);
    await mkdir(dirname(target), { recursive: true });
    await writeFileAtomic(target, data, { mode: options.mode ?? 0o644 });
  }

  async remove(path: string): Promise<void> {
    await rm(this.#hostPath(path), { recursive: true, force: true });
  }

  async copyIn(hostPath: string, path: string): Promise<void> {
    const target = this.#hostPath(path);
    await mkdir(dirname(target), { recursive: true });
    await rm(target, { force: true });
    // Same file system: a link costs nothing (the node only reads it); otherwise a copy.
    await link(hostPath, target).catch(() => copyFile(hostPath, target));
  }

  async boot(): Promise<void> {
    await powerOnTpm(
      this.#paths.tpmSocket,
      await readFirmware(this.#paths.firmware),
      this.#hostPath(this.#paths.eventLog),
    );
    await bootNode(await this.#environment());
  }

  async poweredOn(): Promise<boolean> {
    const environment = await readNodeEnvironment(this.record.dir);
    return environment !== undefined && environment.runnerPid > 0 && isRunning(environment.runnerPid);
  }

  async shutdown(options: ShutdownOptions = {}): Promise<void> {
    const environment = await this.#environment();
    await shutdownNode(environment, { powerLoss: options.powerLoss === true, graceMs: options.graceMs });
    await resetForBoot(environment);
  }

  async destroy(): Promise<void> {
    const environment = await readNodeEnvironment(this.record.dir);
    if (environment !== undefined) await destroyNode(environment);
    const swtpm = await readPid(this.#paths.tpmPidFile);
    await stopProcess(swtpm);
  }

  async unitState(unit: string): Promise<UnitStatus | undefined> {
    const environment = await readNodeEnvironment(this.record.dir);
    if (environment === undefined) return undefined;
    return unitState(environment, unit).catch(() => undefined);
  }

  logPath(unit: string): string {
    return unitLog(this.record.dir, unit);
  }

  async hostProcesses(): Promise<number[]> {
    const environment = await readNodeEnvironment(this.record.dir);
    const swtpm = await readPid(this.#paths.tpmPidFile);
    return [...(environment === undefined ? [] : await nodeProcesses(environment)), ...(swtpm > 0 ? [swtpm] : [])];
  }
}
