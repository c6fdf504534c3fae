import { randomBytes } from 'node:crypto';
import { isNodeMarked } from '@constellation/nodelock';
import type { NodeContext } from './node-context.js';
import { writeFileAtomic } from './secure-files.js';

/**
 * Where a starting node stands: `marked` (PCR 15 says it joined a cluster during this boot),
 * `initialized` (its state disk belongs to a cluster) or `fresh` (the disk is being formatted for
 * first boot, or reset, with a random first-boot passphrase; its operations wait for the format).
 */
export type NodeAssessment = 'marked' | 'initialized' | 'fresh';

/** Starts the TPM and reads PCR 15: whether this node joined a cluster during this boot. */
export async function readNodeMark(tpm: NodeContext['tpm']): Promise<boolean> {
  await tpm.startup();
  return isNodeMarked(tpm);
}

/**
 * Reads PCR 15 (or takes `marked`, when the caller read it already), then the state disk; a
 * fresh or reset disk is 'fresh' at once, its format under way (StateDisk.formatInBackground).
 * Needs only the TPM and the disk, not the attestation issuer: the bootstrapper runs it while
 * the issuer is created, so the first-boot format (a cryptsetup process), the TPM's key creation
 * and the InitServer's start overlap.
 */
export async function assessNode(
  node: Pick<NodeContext, 'tpm' | 'disk' | 'paths' | 'logger'>,
  marked: Promise<boolean> = readNodeMark(node.tpm),
): Promise<NodeAssessment> {
  const { disk, paths, logger } = node;
  if (await marked) return 'marked';
  if ((await disk.isLuks()) && (await disk.isInitialized())) return 'initialized';
  const passphrase = randomBytes(32);
  logger.info('formatting the state disk for first boot', { device: disk.device });
  // Started at once: the disk's operations wait for it (StateDisk.ready), the InitServer does not.
  void disk.formatInBackground(passphrase);
  // Written before the assessment answers: init and join, which read it, come after.
  await writeFileAtomic(paths.initialDiskKey, passphrase, true);
  return 'fresh';
}
