import { mkdir, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { shellQuote } from './self-command.js';
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
 * A workspace directory created here is 0700, like ~/.ssh: it holds the cluster's secrets, and its
 * listing (which files exist, failure logs' names) is nobody else's business either.
 */
export async function writeWorkspaceFile(
  path: string,
  content: string | Uint8Array,
  secret: boolean,
  options: { exclusive?: boolean } = {},
): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  await writeFileAtomic(path, content, { mode: secret ? 0o600 : 0o644, ...options });
}

/**
 * A secret file's mode, judged like ssh judges a private key: readable or writable by anyone but
 * its owner means it may have been copied or replaced. Returns the warning to show, or undefined.
 */
export async function looseSecretFileWarning(path: string): Promise<string | undefined> {
  const mode = (await stat(path)).mode & 0o777;
  if ((mode & 0o077) === 0) return undefined;
  return `${path} is accessible to others than its owner (mode ${mode.toString(8).padStart(4, '0')}): whoever can read it can open every node's disk; restrict it with: chmod 600 ${shellQuote(resolve(path))}`;
}
