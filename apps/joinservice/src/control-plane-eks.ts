import { readFile } from 'node:fs/promises';

const ENTRY = /^(?:sha256:)?([0-9a-f]{64})$/i;

/**
 * The bare-metal list of machines that may join as control planes (`--control-plane-eks`): one
 * EK hash per line, `sha256:<64 hex digits>` (SHA-256 of the EK's SubjectPublicKeyInfo, as a
 * refusal names it), `#` starts a comment. Without a registry nothing else says which machine is
 * a control plane, and a control plane receives the cluster CA keys.
 */
export function parseControlPlaneEks(text: string, source: string): ReadonlySet<string> {
  const hashes = new Set<string>();
  text.split('\n').forEach((line, index) => {
    const entry = (line.split('#', 1)[0] ?? '').trim();
    if (entry === '') return;
    const hash = ENTRY.exec(entry)?.[1];
    if (hash === undefined) {
      throw new Error(
        `${source} line ${index + 1}: expected an EK hash "sha256:" followed by 64 hex digits, got ${JSON.stringify(entry.slice(0, 80))}`,
      );
    }
    hashes.add(hash.toLowerCase());
  });
  return hashes;
}

export async function readControlPlaneEks(path: string): Promise<ReadonlySet<string>> {
  return parseControlPlaneEks(await readFile(path, 'utf8'), path);
}
