import { errorMessage } from '@constellation/errors';
import { UsageError } from './usage-error.js';

/**
 * Reads the file an option names: a file that cannot be read or parsed is the user's to fix, so
 * its failure becomes a UsageError naming the option ("--ek-roots: <why>").
 */
export async function readOptionFile<T>(option: string, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (err) {
    throw new UsageError(`${option}: ${errorMessage(err)}`);
  }
}
