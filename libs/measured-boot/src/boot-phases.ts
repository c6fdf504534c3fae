import { predictedPcr, sha256 } from './predicted-pcr.js';
import type { PredictedPcr } from './predicted-pcr.js';

/**
 * The words systemd 252's units extend into PCR 11 over a system's life, in order
 * (systemd-pcrphase.service(8)): the initrd starts, leaves, sysinit.target, the system is ready,
 * shutdown starts, service management ends.
 */
export const BOOT_PHASES = ['enter-initrd', 'leave-initrd', 'sysinit', 'ready', 'shutdown', 'final'] as const;

export type BootPhase = (typeof BOOT_PHASES)[number];

/**
 * PCR 11 after systemd-pcrphase extended these words into it. systemd 252's pcrphase.c hashes
 * strlen(word) bytes of the argument (EVP_Digest(word, length)), so the digest is SHA-256 of the
 * word's UTF-8 without a NUL, and extends it with Esys_PCR_Extend: no firmware event log entry.
 * It refuses an empty word, and an argv word cannot hold a NUL; so do we.
 */
export function extendBootPhases(pcr11: PredictedPcr, phases: readonly string[]): PredictedPcr {
  const events = phases.map((word) => {
    if (word.length === 0 || word.includes('\0')) {
      throw new RangeError(
        `boot phase ${JSON.stringify(word)}: systemd-pcrphase measures only non-empty words without NUL`,
      );
    }
    return {
      pcr: 11,
      type: null,
      // The word's UTF-8 bytes, no NUL.
      digest: sha256(Buffer.from(word, 'utf8')),
      eventData: null,
      measuredBy: 'systemd-pcrphase' as const,
      description: `systemd-pcrphase: ${JSON.stringify(word)} (TPM2_PCR_Extend, not in the firmware event log)`,
    };
  });
  return predictedPcr(pcr11.pcr, [...pcr11.events, ...events]);
}
