import { constants } from 'node:fs';
import { open } from 'node:fs/promises';

/** Owners whose files are trusted: root, and the user this process runs as (root on a node). */
export function isTrustedOwner(uid: number): boolean {
  return uid === 0 || uid === process.geteuid?.();
}

/**
 * Reads a file that decides what the node trusts (the keyring, the serial record). It must be a
 * regular file, not a symlink (O_NOFOLLOW), owned by root, and writable by nobody else: a
 * world-writable keyring would let anyone add their key. Checked on the open handle, so the file
 * checked is the file read. `undefined` when it does not exist and `missing` allows that.
 */
export async function readTrustedFile(
  path: string,
  what: string,
  maxBytes: number,
  missing: 'refuse' | 'allow' = 'refuse',
): Promise<Buffer | undefined> {
  let handle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && missing === 'allow') return undefined;
    if (code === 'ELOOP')
      throw new Error(`${what} ${path} is a symbolic link; it must be a regular file`, { cause: err });
    throw new Error(`${what} ${path} cannot be opened: ${code ?? String(err)}`, { cause: err });
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) throw new Error(`${what} ${path} is not a regular file`);
    if (!isTrustedOwner(stats.uid)) throw new Error(`${what} ${path} is owned by uid ${stats.uid}, not root`);
    if ((stats.mode & 0o022) !== 0)
      throw new Error(
        `${what} ${path} has mode ${(stats.mode & 0o777).toString(8).padStart(4, '0')}; it must not be group- or world-writable`,
      );
    if (stats.size > maxBytes) throw new Error(`${what} ${path} is ${stats.size} bytes (at most ${maxBytes})`);
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}
