import { open } from 'node:fs/promises';
import { basename, dirname } from 'node:path';

/** sockaddr_un's sun_path holds 108 bytes, the terminating NUL included. */
export const MAX_UNIX_SOCKET_PATH_BYTES = 107;

/**
 * Runs `use` (a bind or a connect) with a path to `socketPath` the kernel accepts. A longer path
 * (a node's directory in a deep workspace) is reached through the open directory's
 * `/proc/self/fd/<fd>/` (Linux): the socket is bound, or found, where `socketPath` names it. Node
 * would bind a truncated path instead, and the socket was not where its owner looked for it.
 */
export async function withUnixSocketPath<T>(socketPath: string, use: (path: string) => Promise<T>): Promise<T> {
  if (Buffer.byteLength(socketPath) <= MAX_UNIX_SOCKET_PATH_BYTES) return use(socketPath);
  const directory = await open(dirname(socketPath), 'r');
  try {
    return await use(`/proc/self/fd/${directory.fd}/${basename(socketPath)}`);
  } finally {
    await directory.close();
  }
}
