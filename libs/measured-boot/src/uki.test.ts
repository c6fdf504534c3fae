import { tempDirForTest } from '@constellation/testing';
import { describe, expect, it } from 'vitest';
import { UkiError } from './errors.js';
import { loadedSectionBytes, readPeImage } from './pe-image.js';
import { buildUki, dumpSection, readStub, standInKernel } from './test-images.fixture.js';
import { readUki } from './uki.js';

/** A copy of `bytes` with section `index`'s header edited. */
function editSection(bytes: Buffer, index: number, edit: (b: Buffer, header: number) => void): Buffer {
  const header = readPeImage(bytes).sections[index]?.headerOffset;
  if (header === undefined) throw new Error(`no section ${index}`);
  const copy = Buffer.from(bytes);
  edit(copy, header);
  return copy;
}

function uki(bytes: Buffer): UkiError {
  try {
    readUki(bytes);
  } catch (err) {
    expect(err).toBeInstanceOf(UkiError);
    return err as UkiError;
  }
  throw new Error('readUki accepted the image');
}

describe('readUki', () => {
  it('finds the sections objcopy added, with the content objcopy dumps, in the stub order', async () => {
    const dir = await tempDirForTest('measured-boot-');
    const stub = await readStub();
    const built = await buildUki(dir, {
      linux: standInKernel(stub),
      osrel: Buffer.from('ID=debian\n'),
      cmdline: Buffer.from('console=ttyS0\n'),
      initrd: Buffer.alloc(3333, 7),
    });
    const read = readUki(built.bytes);
    expect([...read.sections.keys()]).toEqual(['.linux', '.osrel', '.cmdline', '.initrd']);
    expect(read.otherSections.map((s) => s.name)).toEqual(readPeImage(stub).sections.map((s) => s.name));
    for (const [name, section] of read.sections) {
      const dumped = await dumpSection(dir, built.path, name);
      expect(Buffer.from(loadedSectionBytes(section.content)), name).toEqual(dumped);
    }
  });

  it('refuses what systemd-stub would read differently than the names say', async () => {
    const dir = await tempDirForTest('measured-boot-');
    const stub = await readStub();
    expect(uki(stub)).toMatchObject({ section: '.linux', message: expect.stringContaining('missing') as unknown });

    const built = await buildUki(dir, { linux: standInKernel(stub), osrel: Buffer.from('ID=x\n') });
    const image = readPeImage(built.bytes);
    const sdmagic = image.sections.findIndex((s) => s.name === '.sdmagic');
    const osrel = image.sections.findIndex((s) => s.name === '.osrel');
    // The stub's own .sdmagic renamed: a second .linux, then one the stub matches by prefix.
    const twice = editSection(built.bytes, sdmagic, (b, at) => b.write('.linux\0\0', at, 8, 'latin1'));
    expect(uki(twice).message).toMatch(/\.linux: appears twice/);
    const prefixed = editSection(built.bytes, sdmagic, (b, at) => b.write('.linuxXY', at, 8, 'latin1'));
    expect(uki(prefixed).message).toMatch(/"\.linuxXY"; systemd-stub compares only the first 6 bytes/);
    const empty = editSection(built.bytes, osrel, (b, at) => b.writeUInt32LE(0, at + 8));
    expect(uki(empty)).toMatchObject({ section: '.osrel' });
  });
});
