import { createTempDir } from '@constellation/testing';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { authenticodeDigest } from './authenticode.js';
import { PeImageError, UkiError } from './errors.js';
import { readPeImage } from './pe-image.js';
import { predictUkiBoot } from './predict-pcrs.js';
import { buildPe, buildUki, readStub, standInKernel } from './test-images.fixture.js';
import { readUki } from './uki.js';

// Property-based fuzzing with fast-check (fixed seeds, bounded runs, so a failure reproduces): real
// and built images, mutated anywhere and where the structure is (counts, sizes, offsets of the
// headers and of each section), must be read, hashed and predicted, or be refused with PeImageError
// or UkiError. Never a TypeError/RangeError from deep inside, never an unbounded allocation.

/** Small enough that hashing any section's zero fill stays quick; the built UKI needs 48 MiB + a bit. */
const LIMITS = { maxImageSize: 64 * 1024 * 1024 };

type Mutation =
  | { kind: 'flip'; at: number; bit: number }
  | { kind: 'truncate'; at: number }
  | { kind: 'insert'; at: number; bytes: Uint8Array }
  | { kind: 'delete'; at: number; count: number }
  | { kind: 'field'; which: number; value: number; width: 2 | 4 };

const interesting32 = fc.oneof(
  fc.constantFrom(
    0,
    1,
    2,
    4,
    8,
    10,
    16,
    17,
    0x40,
    0x200,
    0x1000,
    0xffff,
    0x10000,
    0x7fffffff,
    0x80000000,
    0xfffffff0,
    0xffffffff,
  ),
  fc.integer({ min: 0, max: 0xffffffff }),
);

const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
  fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
  fc.record({
    kind: fc.constant('insert' as const),
    at: fc.nat(),
    bytes: fc.uint8Array({ minLength: 1, maxLength: 16 }),
  }),
  fc.record({ kind: fc.constant('delete' as const), at: fc.nat(), count: fc.integer({ min: 1, max: 64 }) }),
  fc.record({
    kind: fc.constant('field' as const),
    which: fc.nat(),
    value: interesting32,
    width: fc.constantFrom(2 as const, 4 as const),
  }),
);

/** Where the structure is: counts, sizes and offsets in the headers and in each section header. */
function structuralOffsets(bytes: Buffer): number[] {
  const image = readPeImage(bytes, LIMITS);
  const coff = image.peHeaderOffset + 4;
  const optional = image.optionalHeaderOffset;
  return [
    0x3c,
    coff + 2,
    coff + 16,
    optional,
    optional + 32,
    optional + 36,
    optional + 44,
    optional + 56,
    optional + 60,
    optional + 68,
    optional + (image.format === 'PE32' ? 92 : 108),
    ...image.dataDirectories.flatMap((d) => [d.entryOffset, d.entryOffset + 4]),
    ...image.sections.flatMap((s) => [
      s.headerOffset,
      s.headerOffset + 8,
      s.headerOffset + 12,
      s.headerOffset + 16,
      s.headerOffset + 20,
    ]),
  ];
}

function mutate(input: Buffer, fields: readonly number[], m: Mutation): Buffer {
  const out = Buffer.from(input);
  const at = 'at' in m ? m.at % input.length : 0;
  switch (m.kind) {
    case 'flip':
      out[at] = (out[at] ?? 0) ^ (1 << m.bit);
      return out;
    case 'truncate':
      return out.subarray(0, at);
    case 'insert':
      return Buffer.concat([out.subarray(0, at), m.bytes, out.subarray(at)]);
    case 'delete':
      return Buffer.concat([out.subarray(0, at), out.subarray(at + m.count)]);
    case 'field': {
      const offset = fields[m.which % fields.length] ?? 0;
      if (offset + m.width > out.length) return out; // an earlier mutation cut the field off
      if (m.width === 2) out.writeUInt16LE(m.value & 0xffff, offset);
      else out.writeUInt32LE(m.value, offset);
      return out;
    }
  }
}

/** Read, hash, read as a UKI, predict: a result or a typed refusal, nothing else. */
function exercise(input: Buffer): 'predicted' | 'refused' {
  try {
    readPeImage(input, LIMITS);
    authenticodeDigest(input, LIMITS);
    readUki(input, LIMITS);
    predictUkiBoot(input, LIMITS);
    return 'predicted';
  } catch (err) {
    if (err instanceof PeImageError || err instanceof UkiError) return 'refused';
    throw new Error(`untyped failure for an input of ${input.length} bytes`, { cause: err });
  }
}

describe('hostile PE images', () => {
  let inputs: { name: string; bytes: Buffer; fields: number[] }[] = [];

  beforeAll(async () => {
    const dir = await createTempDir('measured-boot-fuzz-');
    const stub = await readStub();
    const uki = await buildUki(dir.path, {
      linux: standInKernel(stub),
      osrel: Buffer.from('ID=debian\n'),
      cmdline: Buffer.from('console=ttyS0 quiet'),
      initrd: Buffer.alloc(4096, 0x42),
    });
    const pe32 = buildPe('PE32', [
      { name: '.text', content: Buffer.alloc(0x300, 0x90) },
      { name: '.data', content: Buffer.from('data'), virtualSize: 0x2000 },
    ]);
    inputs = [
      { name: 'systemd-stub', bytes: stub },
      { name: 'UKI', bytes: uki.bytes },
      { name: 'PE32', bytes: pe32 },
    ].map((input) => ({ ...input, fields: structuralOffsets(input.bytes) }));
    expect(exercise(uki.bytes)).toBe('predicted');
    await dir.remove();
  });

  it('are read, hashed and predicted, or refused with a named error', () => {
    const outcomes = { predicted: 0, refused: 0 };
    for (const [index, input] of inputs.entries()) {
      fc.assert(
        fc.property(fc.array(mutationArb, { minLength: 1, maxLength: 4 }), (mutations) => {
          const bytes = mutations.reduce((b, m) => (b.length < 4 ? b : mutate(b, input.fields, m)), input.bytes);
          outcomes[exercise(bytes)]++;
        }),
        { numRuns: 400, seed: 0x6d6200 + index },
      );
    }
    // Both outcomes happen: the fuzzing reaches past the first checks.
    expect(outcomes.predicted).toBeGreaterThan(0);
    expect(outcomes.refused).toBeGreaterThan(0);
  });

  it('with huge counts and sizes are refused before any work proportional to them', { timeout: 10_000 }, () => {
    const uki = inputs.find((i) => i.name === 'UKI');
    if (uki === undefined) throw new Error('no UKI');
    const image = readPeImage(uki.bytes, LIMITS);
    const initrd = image.sections.find((s) => s.name === '.initrd');
    const patch = (offset: number, value: number, width: 2 | 4 = 4): Buffer =>
      mutate(uki.bytes, [offset], { kind: 'field', which: 0, value, width });
    const cases: [string, Buffer, RegExp][] = [
      ['NumberOfSections', patch(image.peHeaderOffset + 6, 0xffff, 2), /NumberOfSections/],
      ['NumberOfRvaAndSizes', patch(image.optionalHeaderOffset + 108, 0xffffffff), /NumberOfRvaAndSizes/],
      ['SizeOfImage', patch(image.optionalHeaderOffset + 56, 0xffffffff), /SizeOfImage/],
      ['VirtualSize', patch((initrd?.headerOffset ?? 0) + 8, 0xfffff000), /VirtualSize/],
      ['SizeOfRawData', patch((initrd?.headerOffset ?? 0) + 16, 0xfffff000), /SizeOfRawData/],
      ['SizeOfHeaders', patch(image.optionalHeaderOffset + 60, 0xffffffff), /SizeOfHeaders/],
    ];
    for (const [name, bytes, field] of cases) {
      expect(() => predictUkiBoot(bytes), name).toThrow(PeImageError);
      expect(() => predictUkiBoot(bytes), name).toThrow(field);
    }
    // The default limit (1 GiB) refuses a 4 GiB image too.
    expect(() => readPeImage(patch(image.optionalHeaderOffset + 56, 0xffffffff))).toThrow(/SizeOfImage/);
  });
});
