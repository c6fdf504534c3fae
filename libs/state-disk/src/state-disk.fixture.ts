import { truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { requireProgram, tempDirForTest } from '@constellation/testing';

/** A blank 32 MiB image file in the test's temporary directory (cryptsetup must be installed). */
export async function blankImage(): Promise<string> {
  await requireProgram('cryptsetup', 'cryptsetup-bin');
  const path = join(await tempDirForTest(), 'state.img');
  await writeFile(path, '');
  await truncate(path, 32 * 1024 * 1024);
  return path;
}
