import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { isTrustedOwner } from './trusted-file.js';

/**
 * What to do about the file at an install destination: install (nothing there, or a root-owned
 * regular file with other content or another mode), or keep (a root-owned regular file with the
 * right digest and exactly the manifest's mode: a kept file with a setuid bit, or not executable,
 * stayed so, red-team finding). A symlink, a FIFO, a directory or a file owned by another user
 * is refused: it was not put there by node preparation. Opened O_NOFOLLOW|O_NONBLOCK, so neither
 * a symlink is followed nor a FIFO blocks the run.
 */
export async function inspectExistingComponent(
  path: string,
  expectedHash: string,
  expectedMode: number,
): Promise<'install' | 'keep'> {
  let handle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return 'install';
    if (code === 'ELOOP')
      throw new Error(`${path} exists and is a symbolic link; refusing to trust or replace it`, { cause: err });
    throw err;
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) throw new Error(`${path} exists and is not a regular file; refusing to trust or replace it`);
    if (!isTrustedOwner(stats.uid))
      throw new Error(`${path} exists and is owned by uid ${stats.uid}, not root; refusing to trust or replace it`);
    if ((stats.mode & 0o022) !== 0 || (stats.mode & 0o7777) !== expectedMode) return 'install';
    const algorithm = expectedHash.slice(0, expectedHash.indexOf(':'));
    const hash = createHash(algorithm);
    for await (const chunk of handle.createReadStream({ autoClose: false }) as AsyncIterable<Buffer>)
      hash.update(chunk);
    return `${algorithm}:${hash.digest('hex')}` === expectedHash ? 'keep' : 'install';
  } finally {
    await handle.close();
  }
}
