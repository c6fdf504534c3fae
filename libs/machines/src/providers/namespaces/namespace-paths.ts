import { join } from 'node:path';

/**
 * Where a namespace machine keeps what a real machine has as hardware: the TPM (swtpm on
 * owner-only unix sockets in the machine's directory, never TCP, so that no other node can reset,
 * save or clone it), the state disk (an image file), the firmware's description and its event log.
 * The node's own files are below its directory: its programs see them at the standard paths
 * (bind mounts), and the bootstrapper runs with the directory as its root.
 */
export interface NamespaceMachinePaths {
  root: string;
  tpmDir: string;
  tpmSocket: string;
  /** swtpm's pid while it runs. */
  tpmPidFile: string;
  stateDisk: string;
  firmware: string;
  /** The firmware's event log as the node sees it (the bootstrapper's --event-log, under its root). */
  eventLog: string;
}

export function namespaceMachinePaths(dir: string): NamespaceMachinePaths {
  return {
    root: dir,
    tpmDir: join(dir, 'tpm'),
    tpmSocket: join(dir, 'tpm', 'swtpm.sock'),
    tpmPidFile: join(dir, 'tpm', 'swtpm.pid'),
    stateDisk: join(dir, 'state.img'),
    firmware: join(dir, 'firmware.json'),
    eventLog: '/var/lib/measured-boot/binary_bios_measurements',
  };
}
