import { constants } from 'node:fs';
import { open } from 'node:fs/promises';

/** fsync of a directory, so a rename inside it survives a crash. */
export async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
