import { PeImageError } from './errors.js';

// A strict, bounded reader of PE/COFF images (Microsoft "PE Format"): the DOS header, the PE
// signature, the COFF header, the optional header (PE32 and PE32+), its data directories and the
// section table. Every offset and size is checked against the file before it is used; anything
// outside the file, overlapping or oversized is refused with a PeImageError naming the field.

/** Bounds a hostile image cannot push us past. */
export const PE_LIMITS = {
  /** The Windows loader's own limit (PE Format, "COFF File Header"). */
  maxSections: 96,
  /** SizeOfImage above this is refused: a loaded section's zero fill is hashed byte by byte. */
  maxImageSize: 1024 * 1024 * 1024,
} as const;

export interface PeReadOptions {
  /** At most this many sections (default PE_LIMITS.maxSections). */
  readonly maxSections?: number;
  /** At most this SizeOfImage in bytes (default PE_LIMITS.maxImageSize). */
  readonly maxImageSize?: number;
}

export type PeFormat = 'PE32' | 'PE32+';

/** Optional header Magic values. */
const PE32_MAGIC = 0x10b;
const PE32_PLUS_MAGIC = 0x20b;

/** The data directory holding the Attribute Certificate Table (its address is a file offset). */
export const CERTIFICATE_TABLE_INDEX = 4;
const MAX_DATA_DIRECTORIES = 16;

const DOS_HEADER_SIZE = 0x40;
const COFF_HEADER_SIZE = 20;
const SECTION_HEADER_SIZE = 40;
const DATA_DIRECTORY_SIZE = 8;
/** Optional header size before the data directories. */
const FIXED_OPTIONAL_HEADER_SIZE: Record<PeFormat, number> = { PE32: 96, 'PE32+': 112 };

export interface DataDirectory {
  readonly index: number;
  /** An RVA, except for the certificate table, where it is a file offset. */
  readonly virtualAddress: number;
  readonly size: number;
  /** Where this entry is in the file (Authenticode skips the certificate table's entry). */
  readonly entryOffset: number;
}

export interface PeSection {
  readonly index: number;
  /** The 8 name bytes as stored (NUL padded). */
  readonly nameBytes: Uint8Array;
  /** The name up to its first NUL, for messages (latin1). */
  readonly name: string;
  readonly virtualSize: number;
  readonly virtualAddress: number;
  readonly sizeOfRawData: number;
  readonly pointerToRawData: number;
  readonly characteristics: number;
  /** Where this section's header is in the file. */
  readonly headerOffset: number;
}

export interface PeImage {
  readonly byteLength: number;
  /** e_lfanew: where "PE\0\0" is. */
  readonly peHeaderOffset: number;
  readonly machine: number;
  readonly timeDateStamp: number;
  readonly characteristics: number;
  readonly format: PeFormat;
  readonly optionalHeaderOffset: number;
  readonly sizeOfOptionalHeader: number;
  readonly addressOfEntryPoint: number;
  readonly imageBase: bigint;
  readonly sectionAlignment: number;
  readonly fileAlignment: number;
  readonly majorImageVersion: number;
  readonly minorImageVersion: number;
  readonly sizeOfImage: number;
  readonly sizeOfHeaders: number;
  readonly checkSum: number;
  /** Where CheckSum is (Authenticode skips it). */
  readonly checkSumOffset: number;
  /** 10 is an EFI application, 11 a boot service driver, 12 a runtime driver. */
  readonly subsystem: number;
  readonly dllCharacteristics: number;
  /** NumberOfRvaAndSizes entries, in order. */
  readonly dataDirectories: readonly DataDirectory[];
  readonly sectionTableOffset: number;
  /** In section table order. */
  readonly sections: readonly PeSection[];
}

/** Reads and checks an image's headers; the section contents stay in `bytes`. */
export function readPeImage(bytes: Uint8Array, options: PeReadOptions = {}): PeImage {
  const maxSections = options.maxSections ?? PE_LIMITS.maxSections;
  const maxImageSize = options.maxImageSize ?? PE_LIMITS.maxImageSize;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const length = bytes.byteLength;
  const u16 = (at: number): number => view.getUint16(at, true);
  const u32 = (at: number): number => view.getUint32(at, true);
  const need = (field: string, at: number, size: number): void => {
    if (at + size > length) {
      throw new PeImageError(field, at, `needs ${size} bytes, the file ends at ${length}`);
    }
  };

  need('DOS header', 0, DOS_HEADER_SIZE);
  if (bytes[0] !== 0x4d || bytes[1] !== 0x5a) {
    throw new PeImageError('DOS header e_magic', 0, `expected "MZ", found 0x${hex(u16(0), 4)}`);
  }
  const peHeaderOffset = u32(0x3c);
  if (peHeaderOffset < DOS_HEADER_SIZE) {
    throw new PeImageError('DOS header e_lfanew', 0x3c, `${peHeaderOffset} points into the DOS header`);
  }
  need('PE signature', peHeaderOffset, 4);
  if (u32(peHeaderOffset) !== 0x00004550) {
    throw new PeImageError(
      'PE signature',
      peHeaderOffset,
      `expected "PE\\0\\0", found 0x${hex(u32(peHeaderOffset), 8)}`,
    );
  }

  const coff = peHeaderOffset + 4;
  need('COFF header', coff, COFF_HEADER_SIZE);
  const machine = u16(coff);
  const numberOfSections = u16(coff + 2);
  const timeDateStamp = u32(coff + 4);
  const sizeOfOptionalHeader = u16(coff + 16);
  const characteristics = u16(coff + 18);
  if (numberOfSections > maxSections) {
    throw new PeImageError('COFF NumberOfSections', coff + 2, `${numberOfSections} is more than ${maxSections}`);
  }

  const optional = coff + COFF_HEADER_SIZE;
  if (sizeOfOptionalHeader < 2) {
    throw new PeImageError('COFF SizeOfOptionalHeader', coff + 16, `${sizeOfOptionalHeader} leaves no optional header`);
  }
  need('optional header (SizeOfOptionalHeader)', optional, sizeOfOptionalHeader);
  const magic = u16(optional);
  let format: PeFormat;
  if (magic === PE32_MAGIC) format = 'PE32';
  else if (magic === PE32_PLUS_MAGIC) format = 'PE32+';
  else {
    throw new PeImageError(
      'optional header Magic',
      optional,
      `expected 0x10b (PE32) or 0x20b (PE32+), found 0x${hex(magic, 4)}`,
    );
  }
  const fixedSize = FIXED_OPTIONAL_HEADER_SIZE[format];
  if (sizeOfOptionalHeader < fixedSize) {
    throw new PeImageError(
      'COFF SizeOfOptionalHeader',
      coff + 16,
      `${sizeOfOptionalHeader} is shorter than a ${format} optional header (${fixedSize} bytes)`,
    );
  }

  const addressOfEntryPoint = u32(optional + 16);
  const imageBase = format === 'PE32' ? BigInt(u32(optional + 28)) : view.getBigUint64(optional + 24, true);
  const sectionAlignment = u32(optional + 32);
  const fileAlignment = u32(optional + 36);
  const majorImageVersion = u16(optional + 44);
  const minorImageVersion = u16(optional + 46);
  const sizeOfImage = u32(optional + 56);
  const sizeOfHeaders = u32(optional + 60);
  const checkSumOffset = optional + 64;
  const checkSum = u32(checkSumOffset);
  const subsystem = u16(optional + 68);
  const dllCharacteristics = u16(optional + 70);
  const rvaCountOffset = optional + fixedSize - 4;
  const numberOfRvaAndSizes = u32(rvaCountOffset);

  if (!isPowerOfTwo(fileAlignment)) {
    throw new PeImageError('optional header FileAlignment', optional + 36, `${fileAlignment} is not a power of two`);
  }
  if (!isPowerOfTwo(sectionAlignment) || sectionAlignment < fileAlignment) {
    throw new PeImageError(
      'optional header SectionAlignment',
      optional + 32,
      `${sectionAlignment} is not a power of two at least FileAlignment (${fileAlignment})`,
    );
  }
  if (numberOfRvaAndSizes > MAX_DATA_DIRECTORIES) {
    throw new PeImageError(
      'optional header NumberOfRvaAndSizes',
      rvaCountOffset,
      `${numberOfRvaAndSizes} is more than ${MAX_DATA_DIRECTORIES}`,
    );
  }
  const directoriesOffset = optional + fixedSize;
  if (fixedSize + numberOfRvaAndSizes * DATA_DIRECTORY_SIZE > sizeOfOptionalHeader) {
    throw new PeImageError(
      'optional header NumberOfRvaAndSizes',
      rvaCountOffset,
      `${numberOfRvaAndSizes} data directories do not fit in SizeOfOptionalHeader (${sizeOfOptionalHeader})`,
    );
  }

  const sectionTableOffset = optional + sizeOfOptionalHeader;
  const sectionTableEnd = sectionTableOffset + numberOfSections * SECTION_HEADER_SIZE;
  need('section table', sectionTableOffset, numberOfSections * SECTION_HEADER_SIZE);
  if (sizeOfHeaders < sectionTableEnd || sizeOfHeaders > length) {
    throw new PeImageError(
      'optional header SizeOfHeaders',
      optional + 60,
      `${sizeOfHeaders} must cover the headers and section table (${sectionTableEnd} bytes) and lie in the file (${length} bytes)`,
    );
  }
  if (sizeOfImage > maxImageSize || sizeOfImage < sizeOfHeaders) {
    throw new PeImageError(
      'optional header SizeOfImage',
      optional + 56,
      `${sizeOfImage} must be at least SizeOfHeaders (${sizeOfHeaders}) and at most ${maxImageSize}`,
    );
  }

  const dataDirectories: DataDirectory[] = [];
  for (let index = 0; index < numberOfRvaAndSizes; index++) {
    const entryOffset = directoriesOffset + index * DATA_DIRECTORY_SIZE;
    const virtualAddress = u32(entryOffset);
    const size = u32(entryOffset + 4);
    if (size > 0) {
      const [limit, what] = index === CERTIFICATE_TABLE_INDEX ? [length, 'the file'] : [sizeOfImage, 'SizeOfImage'];
      if (virtualAddress + size > limit) {
        throw new PeImageError(
          `data directory ${index}`,
          entryOffset,
          `[${virtualAddress}, +${size}) reaches past ${what} (${limit})`,
        );
      }
    }
    dataDirectories.push({ index, virtualAddress, size, entryOffset });
  }

  const sections: PeSection[] = [];
  for (let index = 0; index < numberOfSections; index++) {
    const at = sectionTableOffset + index * SECTION_HEADER_SIZE;
    const nameBytes = bytes.slice(at, at + 8);
    const nul = nameBytes.indexOf(0);
    const section: PeSection = {
      index,
      nameBytes,
      name: Buffer.from(nameBytes.subarray(0, nul < 0 ? 8 : nul)).toString('latin1'),
      virtualSize: u32(at + 8),
      virtualAddress: u32(at + 12),
      sizeOfRawData: u32(at + 16),
      pointerToRawData: u32(at + 20),
      characteristics: u32(at + 36),
      headerOffset: at,
    };
    checkSection(section, { length, sizeOfHeaders, sizeOfImage });
    sections.push(section);
  }
  refuseOverlaps(sections, 'file', (s) => [s.pointerToRawData, s.sizeOfRawData]);
  refuseOverlaps(sections, 'memory', (s) => [s.virtualAddress, loadedSize(s)]);

  return {
    byteLength: length,
    peHeaderOffset,
    machine,
    timeDateStamp,
    characteristics,
    format,
    optionalHeaderOffset: optional,
    sizeOfOptionalHeader,
    addressOfEntryPoint,
    imageBase,
    sectionAlignment,
    fileAlignment,
    majorImageVersion,
    minorImageVersion,
    sizeOfImage,
    sizeOfHeaders,
    checkSum,
    checkSumOffset,
    subsystem,
    dllCharacteristics,
    dataDirectories,
    sectionTableOffset,
    sections,
  };
}

/**
 * How many bytes a loader maps for the section: VirtualSize, or SizeOfRawData when VirtualSize is 0
 * (as EDK2's PE loader does).
 */
export function loadedSize(section: PeSection): number {
  return section.virtualSize === 0 ? section.sizeOfRawData : section.virtualSize;
}

/** A section's bytes once loaded: the file's raw data cut to VirtualSize, then zeros up to it. */
export interface LoadedSection {
  /** The part that comes from the file (a view into the image bytes, not a copy). */
  readonly fileBytes: Uint8Array;
  /** Zero bytes after fileBytes (VirtualSize beyond SizeOfRawData). */
  readonly zeroFill: number;
  /** fileBytes.length + zeroFill: VirtualSize. */
  readonly length: number;
}

/** The first VirtualSize bytes at the section's address after loading. */
export function loadedSection(bytes: Uint8Array, section: PeSection): LoadedSection {
  const fromFile = Math.min(section.virtualSize, section.sizeOfRawData);
  return {
    fileBytes: bytes.subarray(section.pointerToRawData, section.pointerToRawData + fromFile),
    zeroFill: section.virtualSize - fromFile,
    length: section.virtualSize,
  };
}

/** The loaded section as one buffer (copies only when there is zero fill). */
export function loadedSectionBytes(section: LoadedSection): Uint8Array {
  if (section.zeroFill === 0) return section.fileBytes;
  const out = new Uint8Array(section.length);
  out.set(section.fileBytes);
  return out;
}

function checkSection(section: PeSection, image: { length: number; sizeOfHeaders: number; sizeOfImage: number }): void {
  const field = (name: string): string => `section ${section.index} (${JSON.stringify(section.name)}) ${name}`;
  if (section.sizeOfRawData > 0) {
    if (section.pointerToRawData < image.sizeOfHeaders) {
      throw new PeImageError(
        field('PointerToRawData'),
        section.headerOffset + 20,
        `${section.pointerToRawData} lies in the headers (SizeOfHeaders ${image.sizeOfHeaders})`,
      );
    }
    if (section.pointerToRawData + section.sizeOfRawData > image.length) {
      throw new PeImageError(
        field('SizeOfRawData'),
        section.headerOffset + 16,
        `[${section.pointerToRawData}, +${section.sizeOfRawData}) reaches past the end of the file (${image.length})`,
      );
    }
  }
  const size = loadedSize(section);
  if (size > 0) {
    if (section.virtualAddress < image.sizeOfHeaders) {
      throw new PeImageError(
        field('VirtualAddress'),
        section.headerOffset + 12,
        `${section.virtualAddress} lies in the headers (SizeOfHeaders ${image.sizeOfHeaders})`,
      );
    }
    if (section.virtualAddress + size > image.sizeOfImage) {
      throw new PeImageError(
        field('VirtualSize'),
        section.headerOffset + 8,
        `[${section.virtualAddress}, +${size}) reaches past SizeOfImage (${image.sizeOfImage})`,
      );
    }
  }
}

/** Sections must not share bytes, neither in the file nor once loaded. */
function refuseOverlaps(
  sections: readonly PeSection[],
  where: 'file' | 'memory',
  range: (s: PeSection) => [start: number, size: number],
): void {
  const present = sections.filter((s) => range(s)[1] > 0).sort((a, b) => range(a)[0] - range(b)[0]);
  for (let i = 1; i < present.length; i++) {
    const before = present[i - 1];
    const after = present[i];
    if (before === undefined || after === undefined) continue;
    const [start, size] = range(before);
    const [next] = range(after);
    if (next < start + size) {
      throw new PeImageError(
        `section ${after.index} (${JSON.stringify(after.name)}) ${where === 'file' ? 'PointerToRawData' : 'VirtualAddress'}`,
        after.headerOffset + (where === 'file' ? 20 : 12),
        `overlaps section ${before.index} (${JSON.stringify(before.name)}) in ${where}, which ends at ${start + size}`,
      );
    }
  }
}

function isPowerOfTwo(n: number): boolean {
  return n > 0 && (n & (n - 1)) === 0;
}

function hex(n: number, digits: number): string {
  return n.toString(16).padStart(digits, '0');
}
