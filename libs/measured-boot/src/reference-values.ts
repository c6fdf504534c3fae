import { attestationFileToJson } from '@constellation/attestation';
import { predictUkiBoot } from './predict-pcrs.js';
import type { PredictUkiBootOptions } from './predict-pcrs.js';
import type { PredictedPcr } from './predicted-pcr.js';

/** The PCRs a UKI boot fixes from the image alone (firmware PCRs 0-3 and 5-7 depend on the machine). */
export const IMAGE_PCRS = [4, 9, 11] as const;

/** PCR 15 carries the cluster's mark; a node that inits or joins has it at zero. */
const CLUSTER_PCR = 15;

export interface ImageReferenceValues {
  /** The predicted PCRs 4, 9 and 11, with the events that explain each. */
  pcrs: PredictedPcr[];
  /** Expected SHA-256 values (hex) by PCR: 4, 9, 11, and 15 at zero, all enforced. */
  measurements: Map<number, string>;
  /** The digests (hex) each of PCRs 4, 9 and 11 may have events with: exactly the predicted ones. */
  pcrEventDigests: Record<string, string[]>;
  kernelCommandLine: string | undefined;
}

/**
 * A node image's reference values, from its UKI without booting it: what the JoinService enforces
 * (measurements) and the event policy that names the event that differs when one does.
 */
export function imageReferenceValues(uki: Uint8Array, options: PredictUkiBootOptions = {}): ImageReferenceValues {
  const prediction = predictUkiBoot(uki, options);
  const pcrs = IMAGE_PCRS.map((pcr) => prediction.pcrs[pcr]);
  return {
    pcrs,
    measurements: new Map([
      ...pcrs.map((p) => [p.pcr, p.value.toString('hex')] as const),
      [CLUSTER_PCR, '00'.repeat(32)],
    ]),
    pcrEventDigests: Object.fromEntries(
      pcrs.map((p) => [String(p.pcr), [...new Set(p.events.map((e) => e.digest.toString('hex')))]]),
    ),
    kernelCommandLine: prediction.kernelCommandLine,
  };
}

/**
 * The attestation file (measurements and event policy, as `parseAttestationFile` reads it) that
 * an image's reference values make: every measurement enforced.
 */
export function referenceAttestationFile(values: ImageReferenceValues): ReturnType<typeof attestationFileToJson> {
  const measurements = new Map(
    [...values.measurements].map(([pcr, hex]) => [pcr, { expected: Buffer.from(hex, 'hex'), warnOnly: false }]),
  );
  return attestationFileToJson(measurements, { pcrEventDigests: values.pcrEventDigests });
}
