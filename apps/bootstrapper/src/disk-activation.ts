import { readFile, rm } from 'node:fs/promises';
import type { NodeContext } from './node-context.js';

/**
 * Mounts the state disk (with --state-mount) and replaces its first-boot passphrase with the key derived for this cluster and marks
 * the disk initialised, with the join's disk receipt that a rejoin shows and the key's check
 * (a wrong key offered later is refused without a cryptsetup run); the first-boot passphrase is
 * deleted. After this the disk only opens with the cluster's key.
 */
export async function rekeyStateDisk(context: NodeContext, diskKey: Buffer, diskReceipt: Uint8Array): Promise<void> {
  const initial = await readFile(context.paths.initialDiskKey);
  // Before anything is written to the directories the disk keeps (PKI, kubelet credentials).
  await context.mountStateDisk?.(initial, true);
  await context.disk.changePassphrase(initial, diskKey);
  await context.disk.setInitialized(true, diskReceipt, diskKey);
  await rm(context.paths.initialDiskKey, { force: true });
}
