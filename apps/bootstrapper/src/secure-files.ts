import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';

/** Writes `content` atomically (temp file + rename); `secret` files get mode 0600. */
export async function writeFileAtomic(path: string, content: string | Uint8Array, secret = false): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const temp = `${path}.tmp-${process.pid}`;
  await writeFile(temp, content, { mode: secret ? 0o600 : 0o644 });
  await rename(temp, path);
}
