import { createHash } from 'node:crypto';
import type { MeasuredEvent } from '@constellation/proto';
import { PCR_COUNT } from '@constellation/tpm';
import type { Tpm } from '@constellation/tpm';
import type { Measurement, Measurements } from './measurements.js';

/** Something a measured boot extends into a PCR. */
export interface BootComponent {
  pcr: number;
  /** What it is, for the event log ("bootstrapper bundle", "kernel command line"). */
  description: string;
  /** SHA-256 of the component's bytes. */
  digest: Buffer;
}

/** SHA-256 of a component's bytes. */
export function componentDigest(bytes: Uint8Array | string): Buffer {
  return createHash('sha256').update(bytes).digest();
}

/** A PCR's value after TPM reset: PCRs 17-22 (locality/DRTM) start at all ones, the rest at zero. */
export function initialPcrValue(pcr: number): Buffer {
  return pcr >= 17 && pcr <= 22 ? Buffer.alloc(32, 0xff) : Buffer.alloc(32);
}

/** The SHA-256 PCR values that extending `events` in order onto reset PCRs produces, for `pcrs`. */
export function replayEvents(
  events: readonly Pick<MeasuredEvent, 'pcr' | 'digest'>[],
  pcrs: readonly number[],
): Map<number, Buffer> {
  const values = new Map<number, Buffer>(pcrs.map((pcr) => [pcr, initialPcrValue(pcr)]));
  for (const event of events) {
    const current = values.get(event.pcr);
    if (current === undefined) continue;
    values.set(event.pcr, createHash('sha256').update(current).update(event.digest).digest());
  }
  return values;
}

/**
 * Extends each component's digest into its PCR (SHA-256 bank), as firmware and boot loader would,
 * and returns the event log.
 */
export async function measureBoot(tpm: Tpm, components: readonly BootComponent[]): Promise<MeasuredEvent[]> {
  const events: MeasuredEvent[] = [];
  for (const component of components) {
    if (component.digest.length !== 32) throw new RangeError(`digest of "${component.description}" must be 32 bytes`);
    await tpm.pcrExtend(component.pcr, [{ hash: 'sha256', digest: component.digest }]);
    events.push({ pcr: component.pcr, digest: component.digest, description: component.description });
  }
  return events;
}

/**
 * Measurements for a node booted with `components`: the replayed value of every PCR in `pcrs`
 * (PCRs without components keep their reset value, so PCR 15, the cluster-ID PCR, is expected
 * to be zero at init and join time).
 */
export function expectedMeasurements(
  components: readonly BootComponent[],
  pcrs: readonly number[],
  warnOnly: readonly number[] = [],
): Measurements {
  for (const pcr of pcrs) {
    if (!Number.isInteger(pcr) || pcr < 0 || pcr >= PCR_COUNT) throw new RangeError(`PCR index ${pcr} out of range`);
  }
  const values = replayEvents(components, pcrs);
  const out = new Map<number, Measurement>();
  for (const pcr of [...pcrs].sort((a, b) => a - b)) {
    out.set(pcr, { expected: values.get(pcr) ?? initialPcrValue(pcr), warnOnly: warnOnly.includes(pcr) });
  }
  return out;
}
