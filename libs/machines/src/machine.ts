/** The node providers mini can make machines with, side by side (as kind's providers are). */
export const MACHINE_PROVIDERS = ['namespaces', 'qemu'] as const;
export type MachineProvider = (typeof MACHINE_PROVIDERS)[number];

/** What mini keeps to find a machine again: `machine.json` in the machine's directory. */
export interface MachineRecord {
  provider: MachineProvider;
  name: string;
  /** The machine's directory on the host: its TPM, disks, logs and the provider's own files. */
  dir: string;
}

export interface ExecResult {
  stdout: string;
  stderr: string;
}

export interface ShutdownOptions {
  /** Cut the power: no unit is told to stop, nothing is flushed by the machine's OS (default false). */
  powerLoss?: boolean;
  /** How long a clean shutdown may take before the power is cut anyway (a provider's own default). */
  graceMs?: number;
}

/** A unit's state as the machine's service manager reports it. */
export interface UnitStatus {
  /** active, activating, inactive, failed */
  state: string;
  /** How it last ended, when it did. */
  lastExit?: string;
}

/**
 * One node of mini, whatever it is made of. mini, its tools and its tests reach a node only through
 * this: a program run on it, its files (paths as the node sees them), power, its units' state and
 * logs, and removal. The bootstrapper, JoinService and CLI never know which provider made it.
 */
export interface Machine {
  readonly record: MachineRecord;
  readonly name: string;
  /** Runs a program on the machine (its PATH, network and files) and returns its output; fails on a non-zero exit. */
  exec(command: readonly string[], options?: { timeoutMs?: number }): Promise<ExecResult>;
  /** A file of the machine, or undefined when it has none there. */
  readFile(path: string): Promise<Buffer | undefined>;
  /** Writes a file of the machine atomically, creating its directory. */
  writeFile(path: string, data: string | Uint8Array, options?: { mode?: number }): Promise<void>;
  /** Removes a file or directory of the machine (nothing when absent). */
  remove(path: string): Promise<void>;
  /** Puts a file of the host onto the machine (an image archive to import). */
  copyIn(hostPath: string, path: string): Promise<void>;
  /** Power on: the firmware measures the boot into the TPM, then the OS starts its units. */
  boot(): Promise<void>;
  /**
   * Power off: the units stop, then whatever is left; the TPM, disks and files stay. With
   * `powerLoss` nothing is asked to stop first: every process of the machine dies at once.
   */
  shutdown(options?: ShutdownOptions): Promise<void>;
  /** Whether the machine is powered on (booted and not shut down since). */
  poweredOn(): Promise<boolean>;
  /** Stops the machine and removes what it has on the host outside its directory. */
  destroy(): Promise<void>;
  /** A unit's state, or undefined while the machine's service manager does not answer. */
  unitState(unit: string): Promise<UnitStatus | undefined>;
  /** Where a unit's log is kept on the host (for messages that point at it). */
  logPath(unit: string): string;
  /** The host's processes that make up the machine (for memory figures). */
  hostProcesses(): Promise<number[]>;
}
