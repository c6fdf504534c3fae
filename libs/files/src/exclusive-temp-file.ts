import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { open, unlink } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

export interface ExclusiveTempFile {
  /** Where the temporary file is (beside the final path, so a rename is atomic). */
  readonly path: string;
  readonly handle: FileHandle;
  /** Closes the handle; calling it again does nothing. */
  close: () => Promise<void>;
  /** Closes the handle (if still open) and removes the file; never throws. */
  discard: () => Promise<void>;
}

/**
 * Creates a new temporary file beside `finalPath` under a random name, opened `wx` and with
 * O_NOFOLLOW: a file or symlink planted under a guessable name can neither be reused nor
 * written through, and two writers never share a name. The mode is set with fchmod, so the
 * process umask cannot loosen or tighten it.
 */
export async function createExclusiveTempFile(finalPath: string, mode: number): Promise<ExclusiveTempFile> {
  const path = join(dirname(finalPath), `.${basename(finalPath)}.${randomBytes(8).toString('hex')}.tmp`);
  // Created owner-only; the final mode is set below, after the file is surely ours.
  const handle = await open(
    path,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    0o600,
  );
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => (closing ??= handle.close());
  const discard = async (): Promise<void> => {
    await close().catch(() => undefined);
    await unlink(path).catch(() => undefined);
  };
  try {
    await handle.chmod(mode);
  } catch (err) {
    await discard();
    throw err;
  }
  return { path, handle, close, discard };
}
