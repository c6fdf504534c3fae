import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';

export interface TempDir {
  path: string;
  remove(): Promise<void>;
}

/**
 * A fresh directory under the OS temp dir; `remove` deletes it and everything in it. Removal
 * retries (bounded) when a process that is still stopping writes one last file meanwhile, such as
 * a bootstrapper recording its final join status: rm then fails with ENOTEMPTY.
 */
export async function createTempDir(prefix = 'constellation-test-'): Promise<TempDir> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  return { path, remove: () => rm(path, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 }) };
}

/** A temp directory that is removed when the current test finishes, pass or fail. */
export async function tempDirForTest(prefix?: string): Promise<string> {
  const dir = await createTempDir(prefix);
  onTestFinished(async () => {
    await dir.remove();
  });
  return dir.path;
}
