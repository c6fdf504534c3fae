import type { Logger } from '@constellation/logger';
import { StateDisk } from '@constellation/state-disk';
import { Tpm } from '@constellation/tpm';
import type { BootstrapperConfig } from './config.js';
import { assessNode } from './node-assessment.js';
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
}

/**
 * Opens the TPM and the state disk and starts assessing the node (PCR 15, then the disk,
 * formatted on first boot). It needs only these small libraries, so it runs before the rest of
 * the program (gRPC, attested TLS, the attestation issuer) is loaded: that loading, and the
 * issuer's TPM work, overlap the first-boot format (a cryptsetup process).
 */
export function openNode(config: BootstrapperConfig, logger: Logger): OpenedNode {
  const tpm = new Tpm(tpmTransport(config.tpm));
  const disk = new StateDisk({ device: config.stateDisk, kdf: config.diskKdf });
  const paths = nodePaths(config.root);
  const assessment = assessNode({ tpm, disk, paths, logger });
  // Its failure is Bootstrapper.run's to report; until run awaits it, it must not count as unhandled.
  assessment.catch(() => undefined);
  return { tpm, disk, paths, assessment };
}
