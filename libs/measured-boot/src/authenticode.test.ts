import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tempDirForTest } from '@constellation/testing';
import { describe, expect, it } from 'vitest';
import { authenticodeDigest, authenticodeRanges } from './authenticode.js';
import { PeImageError } from './errors.js';
import { readPeImage } from './pe-image.js';
import {
  STUB_PATH,
  buildPe,
  buildUki,
  osslsigncodeDigest,
  pesignDigest,
  readStub,
  signWithOsslsigncode,
  standInKernel,
} from './test-images.fixture.js';

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

describe('authenticodeDigest', () => {
  it("matches pesign on Debian's systemd-stub (whose symbol table trails its sections)", async () => {
    const stub = await readStub();
    const ranges = authenticodeRanges(readPeImage(stub));
    expect(ranges.at(-1)?.what).toBe('data after the sections');
    expect(hex(authenticodeDigest(stub))).toBe(await pesignDigest(STUB_PATH));
  });

  it('matches pesign on a UKI objcopy builds from the stub', async () => {
    const dir = await tempDirForTest('measured-boot-');
    const stub = await readStub();
    const uki = await buildUki(dir, {
      linux: standInKernel(stub),
      osrel: Buffer.from('ID=debian\nVERSION_ID=12\n'),
      cmdline: Buffer.from('console=ttyS0 root=/dev/vda2\n'),
      initrd: Buffer.alloc(5000, 0x5a),
    });
    expect(hex(authenticodeDigest(uki.bytes))).toBe(await pesignDigest(uki.path));
  });

  it('leaves out a certificate table: matches osslsigncode and pesign on a signed UKI', async () => {
    const dir = await tempDirForTest('measured-boot-');
    const stub = await readStub();
    const uki = await buildUki(dir, { linux: standInKernel(stub), cmdline: Buffer.from('quiet') });
    const signedPath = await signWithOsslsigncode(dir, uki.path);
    const signed = await readFile(signedPath);
    const image = readPeImage(signed);
    expect(image.dataDirectories[4]?.size).toBeGreaterThan(0);
    const digest = hex(authenticodeDigest(signed));
    expect(digest).toBe(await osslsigncodeDigest(signedPath));
    expect(digest).toBe(await pesignDigest(signedPath));
    // osslsigncode pads the file to 8 bytes before the table: the padding is hashed, the table not.
    const padded = Buffer.concat([uki.bytes, Buffer.alloc((8 - (uki.bytes.length % 8)) % 8)]);
    expect(digest).toBe(hex(authenticodeDigest(padded)));
  });

  it('matches pesign on a PE32 image and on one with trailing data', async () => {
    const dir = await tempDirForTest('measured-boot-');
    const sections = [
      { name: '.text', content: Buffer.alloc(0x234, 0x90) },
      { name: '.data', content: Buffer.from('hello') },
    ];
    for (const [name, bytes] of [
      ['pe32.efi', buildPe('PE32', sections)],
      ['trailing.efi', buildPe('PE32+', sections, Buffer.from('not 8-byte aligned'))],
    ] as const) {
      const path = join(dir, name);
      await writeFile(path, bytes);
      expect(hex(authenticodeDigest(bytes)), name).toBe(await pesignDigest(path));
    }
  });

  it('ignores CheckSum and the certificate table entry, and nothing else in the headers', async () => {
    const stub = await readStub();
    const image = readPeImage(stub);
    const digest = hex(authenticodeDigest(stub));
    const certificateEntry = image.dataDirectories[4]?.entryOffset ?? -1;
    const skipped = new Set([0, 1, 2, 3].flatMap((i) => [image.checkSumOffset + i]));
    const changed = Buffer.from(stub);
    changed.writeUInt32LE(0xdeadbeef, image.checkSumOffset);
    expect(hex(authenticodeDigest(changed))).toBe(digest);
    // Every other byte of the optional header counts (the entry itself points nowhere when zero,
    // so it can only be changed together with the file; see the signed test).
    for (let at = image.optionalHeaderOffset; at < image.sectionTableOffset; at++) {
      if (skipped.has(at) || (at >= certificateEntry && at < certificateEntry + 8)) continue;
      const flipped = Buffer.from(stub);
      flipped[at] = (flipped[at] ?? 0) ^ 0x01;
      let other: string | undefined;
      try {
        other = hex(authenticodeDigest(flipped));
      } catch (err) {
        expect(err).toBeInstanceOf(PeImageError); // the flip made the image invalid: also a change
        continue;
      }
      expect(other, `byte ${at}`).not.toBe(digest);
    }
  });

  it('refuses a certificate table that does not end the file', () => {
    const bytes = buildPe('PE32+', [{ name: '.text', content: Buffer.alloc(0x200, 1) }], Buffer.alloc(64, 0xee));
    const image = readPeImage(bytes);
    const entry = image.dataDirectories[4]?.entryOffset ?? 0;
    bytes.writeUInt32LE(bytes.length - 64, entry);
    bytes.writeUInt32LE(32, entry + 4);
    expect(() => authenticodeDigest(bytes)).toThrow(/certificate table at offset \d+: .* must end the file/);
    bytes.writeUInt32LE(64, entry + 4);
    expect(authenticodeRanges(readPeImage(bytes)).at(-1)?.what).toBe('section 0 (.text)');
  });
});
