import { requireProgram, runChecked } from '@constellation/testing';
import { describe, expect, it } from 'vitest';
import { PeImageError } from './errors.js';
import { loadedSection, loadedSectionBytes, readPeImage } from './pe-image.js';
import { STUB_PATH, buildPe, readStub } from './test-images.fixture.js';

/** objdump's section table (binutils' own PE reader): name, size, VMA, file offset. */
async function objdumpSections(path: string): Promise<{ name: string; size: number; vma: number; offset: number }[]> {
  const objdump = await requireProgram('objdump', 'binutils');
  const { stdout } = await runChecked(objdump, ['-h', path], { timeoutMs: 30_000 });
  const rows = [
    ...stdout.toString('utf8').matchAll(/^\s*\d+\s+(\S+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)\s/gm),
  ];
  return rows.map((m) => ({
    name: m[1] ?? '',
    size: parseInt(m[2] ?? '', 16),
    vma: parseInt(m[3] ?? '', 16),
    offset: parseInt(m[4] ?? '', 16),
  }));
}

function expectPeError(
  bytes: Uint8Array,
  field: RegExp,
  options: Parameters<typeof readPeImage>[1] = {},
): PeImageError {
  let caught: unknown;
  try {
    readPeImage(bytes, options);
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(PeImageError);
  const error = caught as PeImageError;
  expect(error.field).toMatch(field);
  return error;
}

describe('readPeImage', () => {
  it("reads Debian's systemd-stub as objdump does", async () => {
    const stub = await readStub();
    const image = readPeImage(stub);
    expect(image).toMatchObject({
      format: 'PE32+',
      machine: 0x8664,
      subsystem: 10,
      sizeOfHeaders: 0x400,
      byteLength: stub.length,
    });
    const objdump = await objdumpSections(STUB_PATH);
    expect(objdump.length).toBeGreaterThan(0);
    expect(
      image.sections.map((s) => ({
        name: s.name,
        size: s.virtualSize,
        vma: s.virtualAddress,
        offset: s.pointerToRawData,
      })),
    ).toEqual(objdump);
    // The base relocation directory points at .reloc.
    const reloc = image.sections.find((s) => s.name === '.reloc');
    expect(image.dataDirectories[5]).toMatchObject({ virtualAddress: reloc?.virtualAddress });
  });

  it('reads a PE32 image and gives each section its loaded bytes', () => {
    const text = Buffer.from('code');
    const data = Buffer.alloc(0x200, 7);
    const bytes = buildPe('PE32', [
      { name: '.text', content: text },
      { name: '.data', content: data, virtualSize: 0x280 },
    ]);
    const image = readPeImage(bytes);
    expect(image.format).toBe('PE32');
    expect(image.dataDirectories).toHaveLength(16);
    const [first, second] = image.sections;
    expect(Buffer.from(loadedSectionBytes(loadedSection(bytes, first!)))).toEqual(text);
    const loaded = loadedSection(bytes, second!);
    // VirtualSize past SizeOfRawData: the loader fills the rest with zeros.
    expect(loaded).toMatchObject({ zeroFill: 0x80, length: 0x280 });
    expect(Buffer.from(loadedSectionBytes(loaded))).toEqual(Buffer.concat([data, Buffer.alloc(0x80)]));
  });

  describe('refuses, naming the field', () => {
    const good = buildPe('PE32+', [
      { name: '.text', content: Buffer.alloc(0x300, 1) },
      { name: '.data', content: Buffer.alloc(0x100, 2) },
    ]);
    const peOffset = 0x40;
    const optional = peOffset + 24;
    const table = optional + 112 + 128;
    const patched = (edit: (b: Buffer) => void): Buffer => {
      const copy = Buffer.from(good);
      edit(copy);
      return copy;
    };

    it('a truncated DOS header or a missing MZ', () => {
      expectPeError(good.subarray(0, 0x20), /^DOS header$/);
      expectPeError(
        patched((b) => b.write('ZM', 0, 'latin1')),
        /e_magic/,
      );
    });
    it('e_lfanew into the DOS header or past the end, and a wrong signature', () => {
      expectPeError(
        patched((b) => b.writeUInt32LE(0x10, 0x3c)),
        /e_lfanew/,
      );
      expectPeError(
        patched((b) => b.writeUInt32LE(0xfffffff0, 0x3c)),
        /PE signature/,
      );
      expectPeError(
        patched((b) => b.write('PX', peOffset, 'latin1')),
        /PE signature/,
      );
    });
    it('too many sections and a section table past the end', () => {
      const error = expectPeError(
        patched((b) => b.writeUInt16LE(0xffff, peOffset + 6)),
        /NumberOfSections/,
      );
      expect(error.message).toContain('65535 is more than 96');
      expectPeError(
        patched((b) => b.writeUInt16LE(90, peOffset + 6)),
        /section table|SizeOfHeaders/,
      );
    });
    it('an optional header that is too short, of an unknown kind, or with too many directories', () => {
      expectPeError(
        patched((b) => b.writeUInt16LE(0, peOffset + 20)),
        /SizeOfOptionalHeader/,
      );
      expectPeError(
        patched((b) => b.writeUInt16LE(100, peOffset + 20)),
        /SizeOfOptionalHeader/,
      );
      expectPeError(
        patched((b) => b.writeUInt16LE(0x107, optional)),
        /Magic/,
      );
      expectPeError(
        patched((b) => b.writeUInt32LE(17, optional + 108)),
        /NumberOfRvaAndSizes/,
      );
      expectPeError(
        patched((b) => b.writeUInt32LE(0x7fffffff, optional + 108)),
        /NumberOfRvaAndSizes/,
      );
    });
    it('alignments that are not powers of two', () => {
      expectPeError(
        patched((b) => b.writeUInt32LE(0x300, optional + 36)),
        /FileAlignment/,
      );
      expectPeError(
        patched((b) => b.writeUInt32LE(0x100, optional + 32)),
        /SectionAlignment/,
      );
    });
    it('SizeOfHeaders and SizeOfImage out of bounds', () => {
      expectPeError(
        patched((b) => b.writeUInt32LE(0x10, optional + 60)),
        /SizeOfHeaders/,
      );
      expectPeError(
        patched((b) => b.writeUInt32LE(0xffffffff, optional + 60)),
        /SizeOfHeaders/,
      );
      expectPeError(
        patched((b) => b.writeUInt32LE(0xffffffff, optional + 56)),
        /SizeOfImage/,
      );
      expectPeError(good, /SizeOfImage/, { maxImageSize: 0x1000 });
    });
    it('data directories outside the image or the file', () => {
      expectPeError(
        patched((b) => {
          b.writeUInt32LE(0xffff0000, optional + 112 + 5 * 8);
          b.writeUInt32LE(0x100, optional + 112 + 5 * 8 + 4);
        }),
        /^data directory 5$/,
      );
      expectPeError(
        patched((b) => {
          b.writeUInt32LE(0x600, optional + 112 + 4 * 8);
          b.writeUInt32LE(0x1000, optional + 112 + 4 * 8 + 4);
        }),
        /^data directory 4$/,
      );
    });
    it('sections outside the file or image, in the headers, or overlapping', () => {
      expectPeError(
        patched((b) => b.writeUInt32LE(0xfffff000, table + 16)),
        /section 0 \(".text"\) SizeOfRawData/,
      );
      expectPeError(
        patched((b) => b.writeUInt32LE(0x100, table + 20)),
        /PointerToRawData/,
      );
      expectPeError(
        patched((b) => b.writeUInt32LE(0x10, table + 12)),
        /section 0 .* VirtualAddress/,
      );
      expectPeError(
        patched((b) => b.writeUInt32LE(0x100000, table + 8)),
        /VirtualSize/,
      );
      // .data's raw data starts inside .text's, then its address does.
      expectPeError(
        patched((b) => b.writeUInt32LE(0x500, table + 40 + 20)),
        /section 1 .* PointerToRawData/,
      );
      expectPeError(
        patched((b) => b.writeUInt32LE(0x1200, table + 40 + 12)),
        /section 1 .* VirtualAddress/,
      );
    });
  });
});
