import { createHash } from 'node:crypto';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { EventLogWriter, cString, filePathDevicePath, imageLoadEventData } from '@constellation/eventlog';
import type { EventPolicy, EventToWrite, EventTypeName } from '@constellation/eventlog';
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
  /**
   * The event real firmware logs for this extend, when the log must match a real boot's (a node
   * image's predicted events); absent, bootComponentEvent's stand-in event.
   */
  event?: { type: EventTypeName; data: Buffer };
}

export interface MeasureBootOptions {
  /**
   * Write a crypto-agile TCG event log (SHA-256 bank) of the extends to this file, in step with
   * them: rewritten (atomically) after each extend, so it always holds exactly what was extended.
   * What the node sends as its event log (the bootstrapper's --event-log).
   */
  eventLog?: string;
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
 * The TCG event a component is logged as: its own `event` where it has one; else in PCR 4 an
 * EV_EFI_BOOT_SERVICES_APPLICATION (what UEFI logs for a kernel or boot loader it starts; the
 * description as its file path), elsewhere an EV_IPL whose data is the description. Either way the
 * digest is the component's, and the data is only a label (it need not hash to the digest):
 * policies name digests, never labels.
 */
export function bootComponentEvent(component: BootComponent): EventToWrite {
  const digests = { sha256: component.digest };
  if (component.event !== undefined) {
    // The writer would log it and extend nothing: the TPM would no longer match the components.
    if (component.event.type === 'EV_NO_ACTION') {
      throw new RangeError(
        `"${component.description}" is extended into PCR ${component.pcr}; EV_NO_ACTION extends nothing`,
      );
    }
    return { pcr: component.pcr, type: component.event.type, data: component.event.data, digests };
  }
  if (component.pcr === 4) {
    return {
      pcr: 4,
      type: 'EV_EFI_BOOT_SERVICES_APPLICATION',
      data: imageLoadEventData({ length: 0, devicePath: filePathDevicePath(`\\${component.description}`) }),
      digests,
    };
  }
  return { pcr: component.pcr, type: 'EV_IPL', data: cString(component.description), digests };
}

/**
 * Extends each component's digest into its PCR (SHA-256 bank), as firmware and boot loader would,
 * and returns the older list of measured events. With `eventLog`, also writes the TCG event log
 * of the extends, one event per component (bootComponentEvent), as firmware would.
 */
export async function measureBoot(
  tpm: Tpm,
  components: readonly BootComponent[],
  options: MeasureBootOptions = {},
): Promise<MeasuredEvent[]> {
  const events: MeasuredEvent[] = [];
  const writer = options.eventLog === undefined ? undefined : new EventLogWriter({ banks: ['sha256'] });
  const save = async (): Promise<void> => {
    if (writer === undefined || options.eventLog === undefined) return;
    const temporary = `${options.eventLog}.tmp`;
    await writeFile(temporary, writer.bytes(), { mode: 0o644 });
    await rename(temporary, options.eventLog);
  };
  if (options.eventLog !== undefined) await mkdir(dirname(options.eventLog), { recursive: true });
  await save(); // a log of no events, until the first extend
  for (const component of components) {
    if (component.digest.length !== 32) throw new RangeError(`digest of "${component.description}" must be 32 bytes`);
    // Logged before the extend and saved after it: a refused extend is never in the file.
    const written = writer?.append(bootComponentEvent(component));
    await tpm.pcrExtend(component.pcr, [
      ...(written?.digests ?? [{ hash: 'sha256' as const, digest: component.digest }]),
    ]);
    await save();
    events.push({ pcr: component.pcr, digest: component.digest, description: component.description });
  }
  return events;
}

/**
 * The event policy a boot with `components` satisfies: for every PCR they measure, exactly their
 * digests (pcrEventDigests). A node whose bootstrapper differs is refused naming the event
 * ("EV_IPL digest sha256:… is not allowed in PCR 9 (event 2, PCR 9)").
 */
export function bootEventPolicy(components: readonly BootComponent[]): EventPolicy {
  const byPcr: Record<string, string[]> = {};
  for (const component of components) {
    const list = (byPcr[String(component.pcr)] ??= []);
    const hex = component.digest.toString('hex');
    if (!list.includes(hex)) list.push(hex);
  }
  return { pcrEventDigests: byPcr };
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
