import { registryMirrorHosts } from '@constellation/node-environment';
import type { Machine } from './machine.js';

/** containerd's per-registry settings on every node (its config_path). */
const REGISTRY_HOSTS_DIR = '/etc/containerd/certs.d';

/**
 * Sends the node's pulls from `upstream` (`registry.k8s.io`) to the registry at `mirror` first
 * (containerd reads the setting at each pull: no restart); `undefined` removes the mirror again.
 */
export async function setRegistryMirror(machine: Machine, upstream: string, mirror: string | undefined): Promise<void> {
  if (!/^[a-z0-9.-]+(:\d+)?$/.test(upstream)) throw new Error(`${JSON.stringify(upstream)} is not a registry host`);
  const dir = `${REGISTRY_HOSTS_DIR}/${upstream}`;
  if (mirror === undefined) {
    await machine.remove(dir);
    return;
  }
  await machine.writeFile(`${dir}/hosts.toml`, registryMirrorHosts(upstream, mirror), { mode: 0o644 });
}
