import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { attestationFileToJson } from '@constellation/attestation';
import type { Measurements } from '@constellation/attestation';
import { UsageError } from '@constellation/command-line';
import { errorMessage } from '@constellation/errors';
import type { EventPolicy } from '@constellation/eventlog';
import { PeImageError, UkiError, predictUkiBoot } from '@constellation/measured-boot';
import type { PredictedPcr } from '@constellation/measured-boot';

/** The PCRs a UKI boot fixes from the image alone (firmware PCRs 0-3 and 5-7 depend on the machine). */
export const IMAGE_PCRS = [4, 9, 11] as const;

export interface ImageReference {
  /** The UKI the values were computed from, and its SHA-256. */
  uki: string;
  ukiSha256: string;
  kernelCommandLine: string | undefined;
  pcrs: PredictedPcr[];
  /** attestationFileToJson's form: PCRs 4, 9, 11 and 15 (zero), and the digests each PCR's events may have. */
  file: ReturnType<typeof attestationFileToJson>;
}

/** `<dir>/uki.efi` for an image directory (npm run node-image's output), else the file itself. */
async function ukiPath(location: string): Promise<string> {
  const info = await stat(location).catch((err: unknown) => {
    throw new UsageError(`cannot read the image at ${location}: ${errorMessage(err)}`);
  });
  return info.isDirectory() ? join(location, 'uki.efi') : location;
}

/**
 * The reference measurements of a node image, computed from its UKI without booting it: PCR 4
 * (the firmware's boot-option events, then the Authenticode digests of the UKI and of its kernel),
 * 9 (the kernel's command line and initrd as the kernel's EFI stub measures them) and 11
 * (systemd-stub's sections); PCR 15 at zero; and an event policy that allows exactly the predicted
 * events' digests in those PCRs, so a refusal names the event that differs.
 */
export async function measurementsFromImage(location: string): Promise<ImageReference> {
  const uki = await ukiPath(location);
  const bytes = await readFile(uki).catch((err: unknown) => {
    throw new UsageError(`cannot read the UKI at ${uki}: ${errorMessage(err)}`);
  });
  let prediction;
  try {
    prediction = predictUkiBoot(bytes);
  } catch (err) {
    if (err instanceof PeImageError || err instanceof UkiError)
      throw new UsageError(`${uki} is not a UKI this can predict: ${err.message}`);
    throw err;
  }
  const pcrs = IMAGE_PCRS.map((pcr) => prediction.pcrs[pcr]);
  const measurements: Measurements = new Map([
    ...pcrs.map((p) => [p.pcr, { expected: p.value, warnOnly: false }] as const),
    [15, { expected: Buffer.alloc(32), warnOnly: false }],
  ]);
  const eventPolicy: EventPolicy = {
    pcrEventDigests: Object.fromEntries(
      pcrs.map((p) => [String(p.pcr), [...new Set(p.events.map((e) => e.digest.toString('hex')))]]),
    ),
  };
  return {
    uki,
    ukiSha256: createHash('sha256').update(bytes).digest('hex'),
    kernelCommandLine: prediction.kernelCommandLine,
    pcrs,
    file: attestationFileToJson(measurements, eventPolicy),
  };
}

/** Each PCR's expected events, one a line: what a person compares with `constellation eventlog`. */
export function predictedEventsTable(reference: ImageReference): string {
  const lines = [`# ${reference.uki} (sha256:${reference.ukiSha256})`];
  for (const pcr of reference.pcrs) {
    lines.push(`PCR ${pcr.pcr} = ${pcr.value.toString('hex')}`);
    for (const event of pcr.events)
      lines.push(
        `  ${(event.type ?? '(no log entry)').padEnd(34)} sha256:${event.digest.toString('hex')}  ${event.description}`,
      );
  }
  return `${lines.join('\n')}\n`;
}
