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

/** Bounds-checked little-endian reads of one file. */
class FileReader {
  readonly bytes: Uint8Array;
  readonly length: number;
  private readonly view: DataView;

  constructor(bytes: Uint8Array) {
    this.bytes = bytes;
    this.length = bytes.byteLength;
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  u16(at: number): number {
    return this.view.getUint16(at, true);
  }

  u32(at: number): number {
    return this.view.getUint32(at, true);
  }

  u64(at: number): bigint {
    return this.view.getBigUint64(at, true);
  }

  /** Refuses `field` when its `size` bytes at `at` are not all in the file. */
  need(field: string, at: number, size: number): void {
    if (at + size > this.length) {
      throw new PeImageError(field, at, `needs ${size} bytes, the file ends at ${this.length}`);
    }
  }
}

/** Reads and checks an image's headers; the section contents stay in `bytes`. */
export function readPeImage(bytes: Uint8Array, options: PeReadOptions = {}): PeImage {
  const file = new FileReader(bytes);
  const peHeaderOffset = readPeHeaderOffset(file);
  const coff = readCoffHeader(file, peHeaderOffset, options.maxSections ?? PE_LIMITS.maxSections);
  const optional = readOptionalHeader(file, coff);
  const sectionTableOffset = optional.optionalHeaderOffset + coff.sizeOfOptionalHeader;
  checkHeaderSizes(file, optional, sectionTableOffset, {
    numberOfSections: coff.numberOfSections,
    maxImageSize: options.maxImageSize ?? PE_LIMITS.maxImageSize,
  });
  const { fixedSize, numberOfRvaAndSizes, ...optionalHeader } = optional;
  return {
    byteLength: file.length,
    peHeaderOffset,
    machine: coff.machine,
    timeDateStamp: coff.timeDateStamp,
    characteristics: coff.characteristics,
    sizeOfOptionalHeader: coff.sizeOfOptionalHeader,
    ...optionalHeader,
    dataDirectories: readDataDirectories(
      file,
      optional.optionalHeaderOffset + fixedSize,
      numberOfRvaAndSizes,
      optional,
    ),
    sectionTableOffset,
    sections: readSections(file, sectionTableOffset, coff.numberOfSections, optional),
  };
}

/** The DOS header's "MZ" and e_lfanew, and the "PE\0\0" it points to: where the PE header is. */
function readPeHeaderOffset(file: FileReader): number {
  file.need('DOS header', 0, DOS_HEADER_SIZE);
  if (file.bytes[0] !== 0x4d || file.bytes[1] !== 0x5a) {
    throw new PeImageError('DOS header e_magic', 0, `expected "MZ", found 0x${hex(file.u16(0), 4)}`);
  }
  const peHeaderOffset = file.u32(0x3c);
  if (peHeaderOffset < DOS_HEADER_SIZE) {
    throw new PeImageError('DOS header e_lfanew', 0x3c, `${peHeaderOffset} points into the DOS header`);
  }
  file.need('PE signature', peHeaderOffset, 4);
  if (file.u32(peHeaderOffset) !== 0x00004550) {
    throw new PeImageError(
      'PE signature',
      peHeaderOffset,
      `expected "PE\\0\\0", found 0x${hex(file.u32(peHeaderOffset), 8)}`,
    );
  }
  return peHeaderOffset;
}

interface CoffHeader {
  /** Where it is in the file. */
  offset: number;
  machine: number;
  numberOfSections: number;
  timeDateStamp: number;
  sizeOfOptionalHeader: number;
  characteristics: number;
}

function readCoffHeader(file: FileReader, peHeaderOffset: number, maxSections: number): CoffHeader {
  const offset = peHeaderOffset + 4;
  file.need('COFF header', offset, COFF_HEADER_SIZE);
  const coff = {
    offset,
    machine: file.u16(offset),
    numberOfSections: file.u16(offset + 2),
    timeDateStamp: file.u32(offset + 4),
    sizeOfOptionalHeader: file.u16(offset + 16),
    characteristics: file.u16(offset + 18),
  };
  if (coff.numberOfSections > maxSections) {
    throw new PeImageError('COFF NumberOfSections', offset + 2, `${coff.numberOfSections} is more than ${maxSections}`);
  }
  return coff;
}

/** The optional header's fields the image keeps, and what reading the rest needs. */
interface OptionalHeader {
  format: PeFormat;
  optionalHeaderOffset: number;
  /** Its size before the data directories (by format). */
  fixedSize: number;
  addressOfEntryPoint: number;
  imageBase: bigint;
  sectionAlignment: number;
  fileAlignment: number;
  majorImageVersion: number;
  minorImageVersion: number;
  sizeOfImage: number;
  sizeOfHeaders: number;
  checkSum: number;
  checkSumOffset: number;
  subsystem: number;
  dllCharacteristics: number;
  numberOfRvaAndSizes: number;
}

/** The optional header (PE32 or PE32+): its format, alignments and the count of data directories. */
function readOptionalHeader(file: FileReader, coff: CoffHeader): OptionalHeader {
  const optional = coff.offset + COFF_HEADER_SIZE;
  const { sizeOfOptionalHeader } = coff;
  if (sizeOfOptionalHeader < 2) {
    throw new PeImageError(
      'COFF SizeOfOptionalHeader',
      coff.offset + 16,
      `${sizeOfOptionalHeader} leaves no optional header`,
    );
  }
  file.need('optional header (SizeOfOptionalHeader)', optional, sizeOfOptionalHeader);
  const format = peFormat(file.u16(optional), optional);
  const fixedSize = FIXED_OPTIONAL_HEADER_SIZE[format];
  if (sizeOfOptionalHeader < fixedSize) {
    throw new PeImageError(
      'COFF SizeOfOptionalHeader',
      coff.offset + 16,
      `${sizeOfOptionalHeader} is shorter than a ${format} optional header (${fixedSize} bytes)`,
    );
  }
  const header: OptionalHeader = {
    format,
    optionalHeaderOffset: optional,
    fixedSize,
    addressOfEntryPoint: file.u32(optional + 16),
    imageBase: format === 'PE32' ? BigInt(file.u32(optional + 28)) : file.u64(optional + 24),
    sectionAlignment: file.u32(optional + 32),
    fileAlignment: file.u32(optional + 36),
    majorImageVersion: file.u16(optional + 44),
    minorImageVersion: file.u16(optional + 46),
    sizeOfImage: file.u32(optional + 56),
    sizeOfHeaders: file.u32(optional + 60),
    checkSumOffset: optional + 64,
    checkSum: file.u32(optional + 64),
    subsystem: file.u16(optional + 68),
    dllCharacteristics: file.u16(optional + 70),
    numberOfRvaAndSizes: file.u32(optional + fixedSize - 4),
  };
  checkOptionalHeader(header, sizeOfOptionalHeader);
  return header;
}

function peFormat(magic: number, at: number): PeFormat {
  if (magic === PE32_MAGIC) return 'PE32';
  if (magic === PE32_PLUS_MAGIC) return 'PE32+';
  throw new PeImageError(
    'optional header Magic',
    at,
    `expected 0x10b (PE32) or 0x20b (PE32+), found 0x${hex(magic, 4)}`,
  );
}

/** Alignments that are powers of two, and data directories that fit in the optional header. */
function checkOptionalHeader(header: OptionalHeader, sizeOfOptionalHeader: number): void {
  const { optionalHeaderOffset: optional, fileAlignment, sectionAlignment, numberOfRvaAndSizes, fixedSize } = header;
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
  const rvaCountOffset = optional + fixedSize - 4;
  if (numberOfRvaAndSizes > MAX_DATA_DIRECTORIES) {
    throw new PeImageError(
      'optional header NumberOfRvaAndSizes',
      rvaCountOffset,
      `${numberOfRvaAndSizes} is more than ${MAX_DATA_DIRECTORIES}`,
    );
  }
  if (fixedSize + numberOfRvaAndSizes * DATA_DIRECTORY_SIZE > sizeOfOptionalHeader) {
    throw new PeImageError(
      'optional header NumberOfRvaAndSizes',
      rvaCountOffset,
      `${numberOfRvaAndSizes} data directories do not fit in SizeOfOptionalHeader (${sizeOfOptionalHeader})`,
    );
  }
}

/** SizeOfHeaders covers the section table and lies in the file; SizeOfImage is within bounds. */
function checkHeaderSizes(
  file: FileReader,
  header: OptionalHeader,
  sectionTableOffset: number,
  limits: { numberOfSections: number; maxImageSize: number },
): void {
  const { optionalHeaderOffset: optional, sizeOfHeaders, sizeOfImage } = header;
  const sectionTableEnd = sectionTableOffset + limits.numberOfSections * SECTION_HEADER_SIZE;
  file.need('section table', sectionTableOffset, limits.numberOfSections * SECTION_HEADER_SIZE);
  if (sizeOfHeaders < sectionTableEnd || sizeOfHeaders > file.length) {
    throw new PeImageError(
      'optional header SizeOfHeaders',
      optional + 60,
      `${sizeOfHeaders} must cover the headers and section table (${sectionTableEnd} bytes) and lie in the file (${file.length} bytes)`,
    );
  }
  if (sizeOfImage > limits.maxImageSize || sizeOfImage < sizeOfHeaders) {
    throw new PeImageError(
      'optional header SizeOfImage',
      optional + 56,
      `${sizeOfImage} must be at least SizeOfHeaders (${sizeOfHeaders}) and at most ${limits.maxImageSize}`,
    );
  }
}

/** The data directories, each within the loaded image (the certificate table: within the file). */
function readDataDirectories(
  file: FileReader,
  directoriesOffset: number,
  count: number,
  header: Pick<OptionalHeader, 'sizeOfImage'>,
): DataDirectory[] {
  const dataDirectories: DataDirectory[] = [];
  for (let index = 0; index < count; index++) {
    const entryOffset = directoriesOffset + index * DATA_DIRECTORY_SIZE;
    const virtualAddress = file.u32(entryOffset);
    const size = file.u32(entryOffset + 4);
    if (size > 0) {
      const [limit, what] =
        index === CERTIFICATE_TABLE_INDEX ? [file.length, 'the file'] : [header.sizeOfImage, 'SizeOfImage'];
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
  return dataDirectories;
}

/** The section table: each section within the file and the image, none overlapping another. */
function readSections(
  file: FileReader,
  sectionTableOffset: number,
  count: number,
  header: Pick<OptionalHeader, 'sizeOfHeaders' | 'sizeOfImage'>,
): PeSection[] {
  const sections: PeSection[] = [];
  for (let index = 0; index < count; index++) {
    const at = sectionTableOffset + index * SECTION_HEADER_SIZE;
    const nameBytes = file.bytes.slice(at, at + 8);
    const nul = nameBytes.indexOf(0);
    const section: PeSection = {
      index,
      nameBytes,
      name: Buffer.from(nameBytes.subarray(0, nul < 0 ? 8 : nul)).toString('latin1'),
      virtualSize: file.u32(at + 8),
      virtualAddress: file.u32(at + 12),
      sizeOfRawData: file.u32(at + 16),
      pointerToRawData: file.u32(at + 20),
      characteristics: file.u32(at + 36),
      headerOffset: at,
    };
    checkSection(section, {
      length: file.length,
      sizeOfHeaders: header.sizeOfHeaders,
      sizeOfImage: header.sizeOfImage,
    });
    sections.push(section);
  }
  refuseOverlaps(sections, 'file', (s) => [s.pointerToRawData, s.sizeOfRawData]);
  refuseOverlaps(sections, 'memory', (s) => [s.virtualAddress, loadedSize(s)]);
  return sections;
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
