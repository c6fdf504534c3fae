import { randomBytes } from 'node:crypto';
import { truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { StateDisk } from '@constellation/state-disk';
import { requireProgram, tempDirForTest } from '@constellation/testing';
import { describe, expect, it } from 'vitest';
import { readNodeState, writeNodeState } from './node-state.js';

/** A real LUKS2 disk (an image file) marked initialised, as after a join. */
async function initialisedDisk(): Promise<StateDisk> {
  await requireProgram('cryptsetup', 'cryptsetup-bin');
  const dir = await tempDirForTest();
  const image = join(dir, 'state.img');
  await writeFile(image, '');
  await truncate(image, 32 * 1024 * 1024);
  const disk = new StateDisk({ device: image, kdf: 'fast', keyDir: join(dir, 'keys') });
  const key = randomBytes(32);
  await disk.format(key);
  await disk.setInitialized(true, Buffer.from('receipt'), key);
  return disk;
}

describe("node state in the state disk's token", () => {
  it('reads back what was written, keeps the receipt and key check beside it, and a reset drops it', async () => {
    const disk = await initialisedDisk();
    const state = { role: 'worker' as const, measurementSalt: Buffer.alloc(32, 7), clusterId: Buffer.alloc(32, 9) };
    await writeNodeState(disk, state);
    await expect(readNodeState(disk)).resolves.toEqual(state);
    expect(await disk.diskReceipt()).toEqual(Buffer.from('receipt'));
    expect(await disk.keyCheck()).toHaveLength(32);
    await disk.setInitialized(false);
    await expect(readNodeState(disk)).rejects.toThrow(
      `node state in the state disk's token (${disk.device}): the token holds none`,
    );
  });

  it('is refused on a disk that does not belong to a cluster', async () => {
    const disk = await initialisedDisk();
    await disk.setInitialized(false);
    await expect(
      writeNodeState(disk, { role: 'worker', measurementSalt: Buffer.alloc(32), clusterId: Buffer.alloc(32) }),
    ).rejects.toThrow('could not keep the node state');
  });

  it('refuses a malformed state naming the disk and the field', async () => {
    const disk = await initialisedDisk();
    const good = { role: 'worker', measurementSalt: 'AAAA', clusterId: 'ab'.repeat(32) };
    const prefix = `node state in the state disk's token (${disk.device})`;
    await disk.setNodeState({ ...good, clusterId: 'AB'.repeat(32) });
    await expect(readNodeState(disk)).rejects.toThrow(`${prefix}: clusterId: expected a string matching`);
    await disk.setNodeState({ ...good, secret: 'x' });
    await expect(readNodeState(disk)).rejects.toThrow(`${prefix}: secret: unexpected field`);
    await disk.setNodeState({ ...good, role: 'admin' });
    await expect(readNodeState(disk)).rejects.toThrow(`${prefix}: role`);
  });
});
