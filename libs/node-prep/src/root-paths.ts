import { chmod, mkdir, realpath } from 'node:fs/promises';
import { isAbsolute, join, relative } from 'node:path';

/** Whether the real path `path` is `root` or inside it. */
export function isInside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/**
 * Creates `dir` (a path relative to `root`) one level at a time and returns its real path. Each
 * level is resolved with realpath and must stay inside the real root: a parent that is a
 * symlink to outside the root is refused, never written through.
 */
export async function ensureDirectoryInsideRoot(root: string, dir: string): Promise<string> {
  const realRoot = await realpath(root);
  let current = realRoot;
  for (const part of dir.split('/').filter((p) => p !== '' && p !== '.')) {
    if (part === '..') throw new Error(`directory ${dir} contains ".."`);
    const next = join(current, part);
    const created = await mkdir(next).then(
      () => true,
      (err: unknown) => {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        return false;
      },
    );
    // 0755 whatever the umask (the unit runs with UMask=0077): the kubelet reads these directories.
    if (created) await chmod(next, 0o755);
    const real = await realpath(next);
    if (!isInside(realRoot, real)) throw new Error(`directory ${dir} leads to ${real}, outside the root ${realRoot}`);
    current = real;
  }
  return current;
}
