import { randomBytes } from 'node:crypto';
import { open, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tempDirForTest } from '@constellation/testing';
import { describe, expect, it } from 'vitest';
import { lacksLuksMagic } from './luks-magic.js';
import { blankImage } from './state-disk.fixture.js';
import { StateDisk } from './state-disk.js';

/** A StateDisk whose cryptsetup is a logging wrapper: `calls()` lists the subcommands it ran. */
async function spiedDisk(device: string): Promise<{ disk: StateDisk; calls: () => Promise<string[]> }> {
  const spy = join(await tempDirForTest(), 'cryptsetup-spy');
  await writeFile(spy, `#!/bin/sh\necho "$1" >> ${spy}.log\nexec cryptsetup "$@"\n`, { mode: 0o755 });
  const calls = async (): Promise<string[]> =>
    (await readFile(`${spy}.log`, 'utf8').catch(() => '')).split('\n').filter((l) => l !== '');
  return { disk: new StateDisk({ device, kdf: 'fast', cryptsetup: spy }), calls };
}

async function overwrite(path: string, offset: number, bytes: Buffer): Promise<void> {
  const file = await open(path, 'r+');
  try {
    await file.write(bytes, 0, bytes.length, offset);
  } finally {
    await file.close();
  }
}

describe('the LUKS magic scan before cryptsetup isLuks', () => {
  it('answers a blank disk from its bytes, without spawning cryptsetup', async () => {
    const { disk, calls } = await spiedDisk(await blankImage());
    expect(await disk.isLuks()).toBe(false);
    expect(await calls()).toEqual([]);
  });

  it('leaves a formatted disk to cryptsetup', async () => {
    const { disk, calls } = await spiedDisk(await blankImage());
    await disk.format(randomBytes(32));
    expect(lacksLuksMagic(disk.device)).toBe(false);
    expect(await disk.isLuks()).toBe(true);
    expect(await calls()).toContain('isLuks');
  });

  // The attack on a shortcut like this one: a disk whose primary header was damaged (a torn write,
  // or someone zeroing its first sector) must not look blank, or the next boot formats over a
  // disk cryptsetup can still recover from its secondary header.
  it('does not take a disk with a wiped primary header for blank: cryptsetup finds the secondary header', async () => {
    const { disk, calls } = await spiedDisk(await blankImage());
    await disk.format(randomBytes(32));
    await overwrite(disk.device, 0, Buffer.alloc(4096));
    expect(lacksLuksMagic(disk.device)).toBe(false);
    expect(await disk.isLuks()).toBe(true);
    expect((await calls()).filter((c) => c === 'isLuks')).toHaveLength(1);
  });

  it('leaves a magic without a valid header to cryptsetup, which says it is not LUKS', async () => {
    const { disk, calls } = await spiedDisk(await blankImage());
    await overwrite(disk.device, 0, Buffer.from('LUKS\xba\xbe', 'latin1'));
    expect(lacksLuksMagic(disk.device)).toBe(false);
    expect(await disk.isLuks()).toBe(false);
    expect(await calls()).toEqual(['isLuks']);
  });

  it('leaves a device it cannot read to cryptsetup', async () => {
    expect(lacksLuksMagic(join(await tempDirForTest(), 'missing.img'))).toBe(false);
  });
});
