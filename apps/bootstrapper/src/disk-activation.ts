import { readFile, rm } from 'node:fs/promises';
import type { NodeContext } from './node-context.js';

/**
 * Mounts the state disk (with --state-mount) and replaces its first-boot passphrase with the key
 * derived for this cluster; the first-boot passphrase is deleted. After this the disk only opens
 * with the cluster's key, but it is not yet the cluster's (markStateDiskJoined): a boot that finds
 * it so formats it anew.
 */
export async function rekeyStateDisk(context: NodeContext, diskKey: Buffer): Promise<void> {
  const initial = await readFile(context.paths.initialDiskKey);
  // Before anything is written to the directories the disk keeps (PKI, kubelet credentials).
  await context.mountStateDisk?.(initial, true);
  await context.disk.changePassphrase(initial, diskKey);
  await rm(context.paths.initialDiskKey, { force: true });
}

/**
 * Marks the state disk initialised, with the disk receipt a rejoin shows and the key's check (a
 * wrong key offered later is refused without a cryptsetup run). A rebooted node rejoins only a
 * disk so marked: a join marks it once kubeadm join has finished, so that a node that lost power
 * half-way through kubeadm join starts over with a fresh disk instead of "rejoining" a cluster it
 * never joined.
 */
export async function markStateDiskJoined(
  context: NodeContext,
  diskKey: Buffer,
  diskReceipt: Uint8Array,
): Promise<void> {
  await context.disk.setInitialized(true, diskReceipt, diskKey);
}
