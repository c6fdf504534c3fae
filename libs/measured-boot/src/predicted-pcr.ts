import { createHash } from 'node:crypto';
import type { EventTypeName } from '@constellation/eventlog';

/** Who extends the PCR: the firmware, systemd-stub, the kernel's EFI stub, or userspace. */
export type MeasuredBy = 'firmware' | 'systemd-stub' | 'linux-efi-stub' | 'systemd-pcrphase';

/** One extend we expect, so that a mismatching PCR can be explained event by event. */
export interface ExpectedEvent {
  readonly pcr: number;
  /**
   * The event type as @constellation/eventlog names it; null for an extend that writes no firmware
   * event log entry (systemd-pcrphase 252 calls TPM2_PCR_Extend directly).
   */
  readonly type: EventTypeName | null;
  /** The SHA-256 digest extended into the PCR. */
  readonly digest: Buffer;
  /** The event data the log should carry, where it is fixed by the image; null where it is not. */
  readonly eventData: Buffer | null;
  readonly measuredBy: MeasuredBy;
  /** What was measured, for a person reading a mismatch. */
  readonly description: string;
}

/** A PCR's predicted SHA-256 value and the extends that produce it from all zeros. */
export interface PredictedPcr {
  readonly pcr: number;
  readonly value: Buffer;
  readonly events: readonly ExpectedEvent[];
}

/** SHA-256 of the concatenated parts. */
export function sha256(...parts: readonly Uint8Array[]): Buffer {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part);
  return hash.digest();
}

/** TPM2_PCR_Extend for the SHA-256 bank: SHA-256(old || digest). */
export function extendSha256(value: Uint8Array, digest: Uint8Array): Buffer {
  return sha256(value, digest);
}

/** Replays the events onto a PCR that starts at 32 zero bytes (PCRs 0-16 after TPM2_Startup). */
export function predictedPcr(pcr: number, events: readonly ExpectedEvent[]): PredictedPcr {
  for (const event of events) {
    if (event.pcr !== pcr) throw new RangeError(`an event for PCR ${event.pcr} cannot explain PCR ${pcr}`);
  }
  const value = events.reduce<Buffer>((current, event) => extendSha256(current, event.digest), Buffer.alloc(32));
  return { pcr, value, events };
}
