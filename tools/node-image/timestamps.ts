// One timestamp for every file of a tree (symlinks themselves included), for reproducible archives.
import { run } from './progress.js';

/** Sets the modification and access times of `dir` and everything below it to `epoch`. */
export async function setTimestamps(dir: string, epoch: number): Promise<void> {
  await run('find', [dir, '-exec', 'touch', '--no-dereference', `--date=@${epoch}`, '{}', '+']);
}
