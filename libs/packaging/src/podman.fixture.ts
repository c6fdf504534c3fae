// Test fixture: podman and buildah with a private container storage (vfs) and the runtime
// settings this machine needs (runc with cgroupfs; crun fails here on cgroups and rlimits).
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { requireProgram, runCommand } from '@constellation/testing';
import type { CommandResult } from '@constellation/testing';

export interface Podman {
  /** Environment for buildah and podman: both read the same storage and engine settings. */
  env: NodeJS.ProcessEnv;
  run(args: readonly string[], timeoutMs?: number): Promise<CommandResult>;
}

export async function createPodman(dir: string): Promise<Podman> {
  await requireProgram('buildah', 'buildah');
  await requireProgram('podman', 'podman');
  await requireProgram('runc', 'runc');
  await mkdir(dir, { recursive: true });
  const storageConf = join(dir, 'storage.conf');
  const containersConf = join(dir, 'containers.conf');
  await writeFile(
    storageConf,
    `[storage]\ndriver = "vfs"\ngraphroot = "${join(dir, 'storage')}"\nrunroot = "${join(dir, 'run')}"\n`,
  );
  await writeFile(
    containersConf,
    // No default rlimits: the runtime may not raise them here.
    '[containers]\ndefault_ulimits = []\n\n[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\n',
  );
  const env = { ...process.env, CONTAINERS_STORAGE_CONF: storageConf, CONTAINERS_CONF: containersConf };
  return {
    env,
    run: (args, timeoutMs = 60_000) => runCommand('podman', args, { timeoutMs, env }),
  };
}
