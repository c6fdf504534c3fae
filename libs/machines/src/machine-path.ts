import { posix } from 'node:path';

/** A path of a file of the machine: absolute, normalised (no `..`) and not the root itself. */
export function checkMachinePath(path: string, machine: string): void {
  if (!posix.isAbsolute(path) || posix.normalize(path) !== path || path === '/')
    throw new RangeError(`${JSON.stringify(path)} is not an absolute, normalised path of a file of ${machine}`);
}
