import type { ComponentManifest } from './component-manifest.js';

export interface ManifestExpectations {
  board: string;
  osVersion: string;
  kubernetesVersion: string;
  /** The highest serial this node has accepted (0 before the first). */
  highestSerial: number;
  now: Date;
}

/**
 * Refuses a signed manifest that is not meant for this node now: made for another board, OS
 * version or Kubernetes version (mix-and-match), past its expiry (freeze), or older than one
 * already accepted (rollback). Each error names the attack it stops.
 */
export function checkManifestApplies(
  manifest: ComponentManifest,
  source: string,
  expected: ManifestExpectations,
): void {
  const mismatch = (field: string, actual: string, wanted: string): Error =>
    new Error(
      `component manifest ${source} is for ${field} ${actual}, this node needs ${wanted} (mix-and-match refused)`,
    );
  if (manifest.board !== expected.board) throw mismatch('board', manifest.board, expected.board);
  if (manifest.osVersion !== expected.osVersion) throw mismatch('OS version', manifest.osVersion, expected.osVersion);
  if (manifest.kubernetesVersion !== expected.kubernetesVersion)
    throw mismatch('Kubernetes', manifest.kubernetesVersion, expected.kubernetesVersion);
  const expires = new Date(manifest.expires);
  if (expires.getTime() <= expected.now.getTime())
    throw new Error(
      `component manifest ${source} expired at ${expires.toISOString()} (stale metadata refused: freeze protection)`,
    );
  if (manifest.serial < expected.highestSerial)
    throw new Error(
      `component manifest ${source} has serial ${manifest.serial}, older than serial ${expected.highestSerial} this node already accepted (rollback refused)`,
    );
}
