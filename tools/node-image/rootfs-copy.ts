// Copying files out of the image's root filesystem as they are there: symlinks stay symlinks (the
// merged /usr's /lib → usr/lib among them), the file at the end of a chain is copied.
import { copyFile, lstat, mkdir, readlink, symlink } from 'node:fs/promises';
import { dirname, join, posix } from 'node:path';

/**
 * Copies `path` (absolute, as the image sees it) from the root `root` into `stage` under the same
 * path: every symlink met on the way, in a directory or at the end, is made again in `stage` and
 * followed inside `root`. Returns the path of the regular file it ended at, as the image sees it.
 */
export async function copyFromRoot(root: string, stage: string, path: string): Promise<string> {
  let current = posix.normalize(path);
  for (let hops = 0; hops < 40; hops++) {
    const parts = current.split('/').filter((p) => p !== '');
    let resolved = '/';
    let followed = false;
    for (const [index, part] of parts.entries()) {
      const candidate = posix.join(resolved, part);
      const info = await lstat(join(root, candidate));
      if (info.isSymbolicLink()) {
        const target = await readlink(join(root, candidate));
        await ensureSymlink(join(stage, candidate), target);
        const rest = parts.slice(index + 1).join('/');
        const base = target.startsWith('/') ? target : posix.join(posix.dirname(candidate), target);
        current = posix.normalize(rest === '' ? base : posix.join(base, rest));
        followed = true;
        break;
      }
      if (index === parts.length - 1) {
        if (!info.isFile()) throw new Error(`${candidate} in the image is not a regular file`);
        await mkdir(dirname(join(stage, candidate)), { recursive: true });
        await copyFile(join(root, candidate), join(stage, candidate));
        return candidate;
      }
      resolved = candidate;
    }
    if (!followed) throw new Error(`${path}: nothing to copy`);
  }
  throw new Error(`${path}: too many symlinks in the image`);
}

async function ensureSymlink(link: string, target: string): Promise<void> {
  try {
    const info = await lstat(link);
    if (info.isSymbolicLink() && (await readlink(link)) === target) return;
    throw new Error(`${link} already exists and is not a symlink to ${target}`);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  await mkdir(dirname(link), { recursive: true });
  await symlink(target, link);
}
