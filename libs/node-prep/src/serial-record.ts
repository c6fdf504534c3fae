import { basename } from 'node:path';
import { writeFileAtomic } from '@constellation/files';
import { ensureDirectoryInsideRoot } from './root-paths.js';
import { readTrustedFile } from './trusted-file.js';

/** The highest manifest serial this node accepted, 0 if none yet. A damaged record is an error, never 0. */
export async function readHighestSerial(root: string, path: string): Promise<number> {
  const dir = await ensureDirectoryInsideRoot(root, path.slice(0, path.length - basename(path).length));
  const bytes = await readTrustedFile(`${dir}/${basename(path)}`, 'manifest serial record', 64, 'allow');
  if (bytes === undefined) return 0;
  const text = bytes.toString('utf8').trim();
  if (!/^\d{1,16}$/.test(text)) throw new Error(`manifest serial record ${path} is damaged: expected a number`);
  return Number(text);
}

/** Records `serial` as the highest accepted (atomically, 0644). */
export async function recordHighestSerial(root: string, path: string, serial: number): Promise<void> {
  const dir = await ensureDirectoryInsideRoot(root, path.slice(0, path.length - basename(path).length));
  await writeFileAtomic(`${dir}/${basename(path)}`, `${serial}\n`, { mode: 0o644 });
}
