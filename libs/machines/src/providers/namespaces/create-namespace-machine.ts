import { mkdir, truncate, writeFile } from 'node:fs/promises';
import { createNodeEnvironment } from '@constellation/node-environment';
import type { NodeEnvironmentOptions } from '@constellation/node-environment';
import { startSwtpmProcess } from '@constellation/swtpm';
import { writeMachineRecord } from '../../machine-record.js';
import { writeFirmware } from './firmware.js';
import type { Firmware } from './firmware.js';
import { NamespaceMachine } from './namespace-machine.js';
import { namespaceMachinePaths } from './namespace-paths.js';

export interface NamespaceMachineOptions extends NodeEnvironmentOptions {
  /** What the stand-in firmware measures at each power-on. */
  firmware: Firmware;
  /** The state disk's size (an empty image file, formatted by the bootstrapper). */
  stateDiskBytes: number;
}

/**
 * Makes a namespace machine, powered off: its TPM (swtpm on the state `manufactureTpm` left in
 * `<dir>/tpm`), an empty state disk, its firmware and its node environment (see
 * createNodeEnvironment). `boot()` powers it on.
 */
export async function createNamespaceMachine(options: NamespaceMachineOptions): Promise<NamespaceMachine> {
  const paths = namespaceMachinePaths(options.dir);
  await mkdir(options.dir, { recursive: true });
  const record = { provider: 'namespaces' as const, name: options.name, dir: options.dir };
  await writeMachineRecord(record);
  await startSwtpmProcess({
    stateDir: paths.tpmDir,
    dataSocket: paths.tpmSocket,
    daemon: true,
    pidFile: paths.tpmPidFile,
    logFile: `${paths.tpmDir}/swtpm.log`,
  });
  await writeFirmware(paths.firmware, options.firmware);
  await writeFile(paths.stateDisk, '');
  await truncate(paths.stateDisk, options.stateDiskBytes);
  await createNodeEnvironment(options);
  return new NamespaceMachine(record);
}
