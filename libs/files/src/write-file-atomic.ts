import { link, rename, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createExclusiveTempFile } from './exclusive-temp-file.js';
import { syncDirectory } from './sync-directory.js';

export interface WriteFileAtomicOptions {
  /** The file's mode, exactly (0600 for secrets); the umask plays no part. */
  mode: number;
  /**
   * Create `path` only if nothing is there (the complete file is linked into place; EEXIST
   * otherwise), so that of two writers racing for a new file exactly one succeeds.
   */
  exclusive?: boolean;
}

/**
 * Replaces `path` with `data` atomically: a unique temporary file (`wx`, O_NOFOLLOW) in the same
 * directory, fchmod, write, fsync, rename, then fsync of the directory. A symlink at `path` is
 * replaced, never written through (with `exclusive`, it is an existing file: EEXIST). On any
 * error the temporary file is removed and `path` is unchanged. The directory must exist.
 */
export async function writeFileAtomic(
  path: string,
  data: string | Uint8Array,
  options: WriteFileAtomicOptions,
): Promise<void> {
  const temp = await createExclusiveTempFile(path, options.mode);
  try {
    await temp.handle.writeFile(data);
    await temp.handle.sync();
    await temp.close();
    if (options.exclusive === true) {
      await link(temp.path, path);
      await unlink(temp.path);
    } else {
      await rename(temp.path, path);
    }
  } catch (err) {
    await temp.discard();
    throw err;
  }
  await syncDirectory(dirname(path));
}
