import { readFile } from 'node:fs/promises';
import { componentDigest } from '@constellation/attestation';
import type { BootComponent } from '@constellation/attestation';

/** The node image's boot chain: a fixed "kernel" and the bootstrapper bundle the node runs. */
export async function bootChain(bundle: string): Promise<BootComponent[]> {
  return [
    { pcr: 4, description: 'kernel', digest: componentDigest('constellation mini node image v1') },
    { pcr: 9, description: 'bootstrapper bundle', digest: componentDigest(await readFile(bundle)) },
  ];
}
