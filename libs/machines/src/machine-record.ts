import { readFile, stat, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { MACHINE_PROVIDERS } from './machine.js';
import type { Machine, MachineProvider, MachineRecord } from './machine.js';
import { NamespaceMachine } from './providers/namespaces/namespace-machine.js';
import { VmMachine } from './providers/qemu/vm-machine.js';

/** The record's file in a machine's directory. */
export const machineRecordPath = (dir: string): string => join(dir, 'machine.json');

export async function writeMachineRecord(record: MachineRecord): Promise<void> {
  await writeFile(machineRecordPath(record.dir), `${JSON.stringify(record, null, 2)}\n`, { mode: 0o644 });
}

const PROVIDERS: Record<MachineProvider, (record: MachineRecord) => Machine> = {
  namespaces: (record) => new NamespaceMachine(record),
  qemu: (record) => new VmMachine(record),
};

/** The machine of a record, through its provider. */
export function openMachine(record: MachineRecord): Machine {
  return PROVIDERS[record.provider](record);
}

/**
 * The machine whose directory this is, or undefined when the directory holds none. Directories
 * without a record (from before providers, or left by a start that failed early) hold namespace
 * machines when they have a node environment or a TPM.
 */
export async function openMachineAt(dir: string): Promise<Machine | undefined> {
  const text = await readFile(machineRecordPath(dir), 'utf8').catch(() => undefined);
  if (text === undefined) {
    const legacy = await Promise.all(
      [join(dir, 'units', 'environment.json'), join(dir, 'tpm')].map((path) =>
        stat(path).then(
          () => true,
          () => false,
        ),
      ),
    );
    return legacy.includes(true)
      ? new NamespaceMachine({ provider: 'namespaces', name: basename(dir), dir })
      : undefined;
  }
  const record = JSON.parse(text) as MachineRecord;
  if (!(MACHINE_PROVIDERS as readonly string[]).includes(record.provider))
    throw new Error(
      `${machineRecordPath(dir)} names provider ${JSON.stringify(record.provider)}; this constellation knows ${MACHINE_PROVIDERS.join(', ')}`,
    );
  return openMachine({ ...record, dir });
}
