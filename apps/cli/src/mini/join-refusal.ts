import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * The latest reason the JoinService gave this node for refusing it, as the node logged it
 * ("no join ticket yet" with the service's PERMISSION_DENIED message), or undefined.
 */
export async function lastJoinRefusal(nodeDir: string): Promise<string | undefined> {
  const log = await readFile(join(nodeDir, 'bootstrapper.log'), 'utf8').catch(() => '');
  const matches = [...log.matchAll(/PERMISSION_DENIED: (attestation rejected: [^"\\;]*(?:; [^"\\]*)?)/g)];
  return matches.at(-1)?.[1];
}
