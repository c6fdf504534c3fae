import { dirname } from 'node:path';
import type { Logger } from '@constellation/logger';
import { StateDisk } from '@constellation/state-disk';
import { DEFAULT_AK_ALGORITHM, Tpm, readEndorsementKeys } from '@constellation/tpm';
import type { EndorsementKeys } from '@constellation/tpm';
import type { BootstrapperConfig } from './config.js';
import { assessNode, readNodeMark } from './node-assessment.js';
import type { NodeAssessment } from './node-assessment.js';
import { nodePaths } from './node-paths.js';
import type { NodePaths } from './node-paths.js';
import { tpmTransport } from './tpm-address.js';

/** The node's devices, opened at start, and the assessment already under way on them. */
export interface OpenedNode {
  tpm: Tpm;
  disk: StateDisk;
  paths: NodePaths;
  assessment: Promise<NodeAssessment>;
  /** The `tpm2-ek` variant's EK certificate, EK and AK, being read while the program loads. */
  endorsementKeys?: Promise<EndorsementKeys>;
}

const settled = (): void => undefined;

/**
 * Opens the TPM and the state disk and starts assessing the node (PCR 15, then the disk,
 * formatted on first boot), then reading the TPM's endorsement keys. It needs only these small
 * libraries, so it runs before the rest of the program (gRPC, attested TLS, the attestation
 * issuer) is loaded: that loading, the EK's regeneration in the TPM and the first-boot format (a
 * cryptsetup process) overlap. The keys wait for PCR 15, so the format starts as early as it can.
 */
export function openNode(config: BootstrapperConfig, logger: Logger): OpenedNode {
  const tpm = new Tpm(tpmTransport(config.tpm));
  const paths = nodePaths(config.root);
  // Key files beside the first-boot passphrase, on /run (a tmpfs), never on a disk.
  const disk = new StateDisk({ device: config.stateDisk, kdf: config.diskKdf, keyDir: dirname(paths.initialDiskKey) });
  const marked = readNodeMark(tpm);
  const assessment = assessNode({ tpm, disk, paths, logger }, marked);
  // Their failures are Bootstrapper.run's and the issuer's to report; until those await them,
  // they must not count as unhandled.
  assessment.catch(() => undefined);
  if (config.attestationVariant !== 'tpm2-ek') return { tpm, disk, paths, assessment };
  const endorsementKeys = marked.then(settled, settled).then(() => readEndorsementKeys(tpm, DEFAULT_AK_ALGORITHM));
  endorsementKeys.catch(() => undefined);
  return { tpm, disk, paths, assessment, endorsementKeys };
}
