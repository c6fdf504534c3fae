import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { attestationFileToJson } from '@constellation/attestation';
import { UsageError } from '@constellation/command-line';
import { errorMessage } from '@constellation/errors';
import { PeImageError, UkiError, imageReferenceValues, referenceAttestationFile } from '@constellation/measured-boot';
import type { PredictedPcr } from '@constellation/measured-boot';

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
  let values;
  try {
    values = imageReferenceValues(bytes);
  } catch (err) {
    if (err instanceof PeImageError || err instanceof UkiError)
      throw new UsageError(`${uki} is not a UKI this can predict: ${err.message}`);
    throw err;
  }
  return {
    uki,
    ukiSha256: createHash('sha256').update(bytes).digest('hex'),
    kernelCommandLine: values.kernelCommandLine,
    pcrs: values.pcrs,
    file: referenceAttestationFile(values),
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
