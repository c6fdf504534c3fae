import { createHash } from 'node:crypto';
import { PeImageError } from './errors.js';
import { CERTIFICATE_TABLE_INDEX, readPeImage } from './pe-image.js';
import type { PeImage, PeReadOptions } from './pe-image.js';

// The Authenticode digest of a PE image, as Microsoft's "Windows Authenticode Portable Executable
// Signature Format" defines it and as EDK2 (OVMF) computes it when it measures an image it loads
// into PCR 4 (DxeTpm2MeasureBootLib): the headers without CheckSum and without the certificate
// table's data-directory entry, then every section with raw data in order of PointerToRawData,
// then whatever the file holds after SizeOfHeaders + the sections' SizeOfRawData, less the
// certificate table's Size at the end.

export type AuthenticodeAlgorithm = 'sha1' | 'sha256' | 'sha384' | 'sha512';

/** One run of file bytes that goes into the digest, in digest order. */
export interface HashedRange {
  readonly start: number;
  readonly end: number;
  /** What the bytes are, for explaining a digest ("section 2 (.data)"). */
  readonly what: string;
}

/** The file ranges the digest covers, in the order they are hashed. */
export function authenticodeRanges(image: PeImage): HashedRange[] {
  const ranges: HashedRange[] = [{ start: 0, end: image.checkSumOffset, what: 'headers up to CheckSum' }];
  const afterCheckSum = image.checkSumOffset + 4;
  const certificateEntry = image.dataDirectories[CERTIFICATE_TABLE_INDEX];
  if (certificateEntry === undefined) {
    // No certificate table entry (NumberOfRvaAndSizes <= 4): only CheckSum is left out.
    ranges.push({ start: afterCheckSum, end: image.sizeOfHeaders, what: 'headers after CheckSum' });
  } else {
    ranges.push({ start: afterCheckSum, end: certificateEntry.entryOffset, what: 'headers after CheckSum' });
    ranges.push({
      start: certificateEntry.entryOffset + 8,
      end: image.sizeOfHeaders,
      what: 'headers after the certificate table entry',
    });
  }

  // A stable sort by PointerToRawData, as the specification (and EDK2's insertion sort) orders them.
  const sections = [...image.sections].sort((a, b) => a.pointerToRawData - b.pointerToRawData || a.index - b.index);
  let sumOfBytesHashed = image.sizeOfHeaders;
  for (const section of sections) {
    if (section.sizeOfRawData === 0) continue;
    ranges.push({
      start: section.pointerToRawData,
      end: section.pointerToRawData + section.sizeOfRawData,
      what: `section ${section.index} (${section.name})`,
    });
    sumOfBytesHashed += section.sizeOfRawData;
  }

  const certificateSize = certificateEntry?.size ?? 0;
  if (certificateSize > 0 && certificateEntry !== undefined) {
    // The digest leaves out the file's last Size bytes; that is the table only when it ends the file.
    if (certificateEntry.virtualAddress + certificateSize !== image.byteLength) {
      throw new PeImageError(
        'certificate table',
        certificateEntry.entryOffset,
        `[${certificateEntry.virtualAddress}, +${certificateSize}) must end the file (${image.byteLength} bytes)`,
      );
    }
  }
  if (image.byteLength > sumOfBytesHashed) {
    // The extra data starts at SUM_OF_BYTES_HASHED (not at the end of the last section).
    const end = image.byteLength - certificateSize;
    if (end < sumOfBytesHashed) {
      throw new PeImageError(
        'certificate table',
        certificateEntry?.entryOffset,
        `Size ${certificateSize} reaches back into the headers and sections (which end at ${sumOfBytesHashed})`,
      );
    }
    if (end > sumOfBytesHashed) ranges.push({ start: sumOfBytesHashed, end, what: 'data after the sections' });
  }
  return ranges.filter((r) => r.end > r.start);
}

export interface AuthenticodeOptions extends PeReadOptions {
  /** Default sha256. */
  readonly algorithm?: AuthenticodeAlgorithm;
}

/** The Authenticode digest of the PE image in `bytes` (the whole file, as a loader is given it). */
export function authenticodeDigest(bytes: Uint8Array, options: AuthenticodeOptions = {}): Buffer {
  const image = readPeImage(bytes, options);
  const hash = createHash(options.algorithm ?? 'sha256');
  for (const range of authenticodeRanges(image)) hash.update(bytes.subarray(range.start, range.end));
  return hash.digest();
}
