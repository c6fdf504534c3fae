import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { writeFileAtomic as replaceFile } from '@constellation/files';

/**
 * Writes `content` atomically with an exact mode (0600 for `secret` files, else 0644), creating the
 * parent directory first. The shared writer uses a unique exclusive temporary file and never
 * follows a symlink planted at the destination.
 */
export async function writeFileAtomic(path: string, content: string | Uint8Array, secret = false): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await replaceFile(path, content, { mode: secret ? 0o600 : 0o644 });
}
