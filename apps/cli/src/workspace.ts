import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { writeFileAtomic } from '@constellation/files';

/** The files `constellation` keeps in its workspace directory. */
export function workspaceFiles(dir: string): {
  config: string;
  state: string;
  masterSecret: string;
  initSecret: string;
  kubeconfig: string;
  initFailureLog: (at: Date) => string;
} {
  return {
    config: join(dir, 'constellation-conf.yaml'),
    state: join(dir, 'constellation-state.yaml'),
    masterSecret: join(dir, 'constellation-mastersecret.json'),
    initSecret: join(dir, 'constellation-init-secret'),
    kubeconfig: join(dir, 'constellation-admin.conf'),
    initFailureLog: (at) => join(dir, `constellation-init-failure-${at.toISOString().replace(/[:.]/g, '-')}.log`),
  };
}

/**
 * Writes atomically through a unique temporary file that never follows a planted symlink;
 * `secret` files are 0600 and never exist with looser modes, whatever the umask or a stale file says.
 */
export async function writeWorkspaceFile(
  path: string,
  content: string | Uint8Array,
  secret: boolean,
  options: { exclusive?: boolean } = {},
): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeFileAtomic(path, content, { mode: secret ? 0o600 : 0o644, ...options });
}
