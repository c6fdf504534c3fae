import { access } from 'node:fs/promises';

/** Whether something exists at `path` that this process may see (a missing file or a denied lookup: false). */
export function pathExists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}
