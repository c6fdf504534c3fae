import { join } from 'node:path';
import { mountStateDisk } from '@constellation/state-disk';
import type { StateDisk } from '@constellation/state-disk';

/** The node's directories that live on the state disk: Kubernetes' configuration and the kubelet's. */
export const PERSISTENT_DIRECTORIES = ['etc/kubernetes', 'var/lib/kubelet'] as const;

/**
 * --state-mount: the state disk mapped as /dev/mapper/state, mounted on `mountPoint` (under
 * `root`), and the persistent directories bound from it. First boot mounts it with the first-boot
 * passphrase before anything is written there; a rejoin mounts it with the key from its ticket,
 * and the kubelet finds its configuration and credentials as they were.
 */
export function stateMounter(
  disk: StateDisk,
  root: string,
  mountPoint: string,
): (passphrase: Buffer, fresh: boolean) => Promise<void> {
  const mountedOn = join(root, mountPoint);
  const binds = PERSISTENT_DIRECTORIES.map((dir) => ({ source: dir, target: join(root, dir) }));
  return (passphrase, fresh) =>
    mountStateDisk(disk, passphrase, { mapperName: 'state', mountPoint: mountedOn, binds }, fresh);
}
