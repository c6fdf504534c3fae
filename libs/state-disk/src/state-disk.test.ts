import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tempDirForTest } from '@constellation/testing';
import { describe, expect, it } from 'vitest';
import { blankImage } from './state-disk.fixture.js';
import { StateDisk, StateDiskError, diskKeyCheck } from './state-disk.js';
import { errorMessage } from '@constellation/errors';

describe('StateDisk with real cryptsetup on an image file', () => {
  it('formats a fresh disk, reports its UUID and marks it not initialised', async () => {
    const disk = new StateDisk({ device: await blankImage(), kdf: 'fast' });
    expect(await disk.isLuks()).toBe(false);
    expect(await disk.isInitialized()).toBe(false);
    const first = randomBytes(32);
    await disk.format(first);
    expect(await disk.isLuks()).toBe(true);
    expect(await disk.uuid()).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(await disk.isInitialized()).toBe(false);
    expect(await disk.testPassphrase(first)).toBe(true);
  });

  it('formats in the background: every operation waits for the format, and fails with its error', async () => {
    const disk = new StateDisk({ device: await blankImage(), kdf: 'fast' });
    const first = randomBytes(32);
    const formatting = disk.formatInBackground(first);
    // Asked at once, each answers about the formatted disk, not the blank one.
    const [luks, uuid, initialised, opens] = await Promise.all([
      disk.isLuks(),
      disk.uuid(),
      disk.isInitialized(),
      disk.testPassphrase(first),
    ]);
    expect({ luks, initialised, opens }).toEqual({ luks: true, initialised: false, opens: true });
    expect(uuid).toMatch(/^[0-9a-f-]{36}$/);
    await formatting;

    const missing = join(await tempDirForTest(), 'no-such-disk');
    const broken = new StateDisk({ device: missing, kdf: 'fast' });
    const failed = broken.formatInBackground(randomBytes(32));
    const err = await broken.uuid().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StateDiskError);
    expect(errorMessage(err)).toMatch(new RegExp(`could not format the state disk \\(${missing}\\)`));
    await expect(failed).rejects.toBe(err);
    await expect(broken.ready()).rejects.toBe(err);
  });

  it('re-keys: the derived key opens the disk and the first passphrase no longer does', async () => {
    const disk = new StateDisk({ device: await blankImage(), kdf: 'fast' });
    const first = randomBytes(32);
    const derived = randomBytes(32);
    await disk.format(first);
    await disk.changePassphrase(first, derived);
    expect(await disk.testPassphrase(derived)).toBe(true);
    expect(await disk.testPassphrase(first)).toBe(false);
  });

  it('keeps the initialised mark in a LUKS2 token and can clear it (reset)', async () => {
    const disk = new StateDisk({ device: await blankImage(), kdf: 'fast' });
    await disk.format(randomBytes(32));
    await disk.setInitialized(true);
    expect(await disk.isInitialized()).toBe(true);
    await disk.setInitialized(false);
    expect(await disk.isInitialized()).toBe(false);
  });

  it("keeps the join's disk receipt in the token, for the disk as booted again, and drops it on reset", async () => {
    const device = await blankImage();
    const disk = new StateDisk({ device, kdf: 'fast' });
    await disk.format(randomBytes(32));
    expect(await disk.diskReceipt()).toBeUndefined();
    const receipt = randomBytes(32);
    await disk.setInitialized(true, receipt);
    const rebooted = new StateDisk({ device, kdf: 'fast' });
    expect(await rebooted.isInitialized()).toBe(true);
    expect(await rebooted.diskReceipt()).toEqual(receipt);
    await rebooted.setInitialized(false, receipt);
    expect(await rebooted.diskReceipt()).toBeUndefined();
  });

  it("keeps the key's check in the token (a hash, not the key), for the disk as booted again, and drops it on reset", async () => {
    const device = await blankImage();
    const disk = new StateDisk({ device, kdf: 'fast' });
    const key = randomBytes(32);
    await disk.format(key);
    await disk.setInitialized(true, randomBytes(32));
    expect(await disk.keyCheck()).toBeUndefined();
    await disk.setInitialized(true, randomBytes(32), key);
    const rebooted = new StateDisk({ device, kdf: 'fast' });
    expect(await rebooted.keyCheck()).toEqual(diskKeyCheck(key));
    expect(diskKeyCheck(key)).not.toEqual(diskKeyCheck(randomBytes(32)));
    expect(diskKeyCheck(key).includes(key)).toBe(false);
    await rebooted.setInitialized(false, undefined, key);
    expect(await rebooted.keyCheck()).toBeUndefined();
  });

  it('fails with a message naming the step and the device when the passphrase is wrong', async () => {
    const device = await blankImage();
    const disk = new StateDisk({ device, kdf: 'fast' });
    await disk.format(randomBytes(32));
    const err = await disk.changePassphrase(randomBytes(32), randomBytes(32)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StateDiskError);
    expect(errorMessage(err)).toMatch(
      new RegExp(`could not re-key the state disk \\(${device}\\): cryptsetup luksChangeKey exited with 2`),
    );
  });

  it('writes key files only under keyDir (a tmpfs in production), never in the temporary directory', async () => {
    // Red-team finding: every key (first-boot passphrase, the cluster's disk key, each key a
    // Recover call offers) went through a file in os.tmpdir(), on the boot disk where /tmp is
    // not a tmpfs: deleted, but its blocks are left for whoever holds that disk's image.
    const device = await blankImage();
    const dir = await tempDirForTest();
    const keyDir = join(dir, 'run', 'cryptsetup-keys.d');
    const spy = join(dir, 'cryptsetup-spy');
    // Records where each key file lives and its directory's mode, as cryptsetup sees them.
    await writeFile(
      spy,
      `#!/bin/sh\nnext=0\nfor a in "$@"; do if [ "$next" = 1 ]; then echo "$(dirname "$a") $(stat -c %a "$(dirname "$a")") $(stat -c %a "$a")" >> ${spy}.log; fi; next=0; [ "$a" = "--key-file" ] && next=1; done\nexec cryptsetup "$@"\n`,
      { mode: 0o755 },
    );
    const disk = new StateDisk({ device, kdf: 'fast', cryptsetup: spy, keyDir });
    const first = randomBytes(32);
    await disk.format(first);
    expect(await disk.testPassphrase(first)).toBe(true);
    const { readFile, readdir } = await import('node:fs/promises');
    const seen = (await readFile(`${spy}.log`, 'utf8')).trim().split('\n');
    expect(seen).toHaveLength(2);
    for (const line of seen) expect(line).toMatch(new RegExp(`^${keyDir}/constellation-keys-\\w+ 700 600$`));
    // Each call's directory is gone after it.
    expect(await readdir(keyDir)).toEqual([]);
  });

  it('never passes key material on the command line', async () => {
    const device = await blankImage();
    const seen: string[][] = [];
    const spy = join(await tempDirForTest(), 'cryptsetup-spy');
    await writeFile(spy, `#!/bin/sh\necho "$@" >> ${spy}.log\nexec cryptsetup "$@"\n`, { mode: 0o755 });
    const disk = new StateDisk({ device, kdf: 'fast', cryptsetup: spy });
    const secret = randomBytes(32);
    await disk.format(secret);
    await disk.changePassphrase(secret, randomBytes(32));
    const { readFile } = await import('node:fs/promises');
    const log = await readFile(`${spy}.log`, 'utf8');
    seen.push(...log.split('\n').map((l) => l.split(' ')));
    expect(log).not.toContain(secret.toString('hex'));
    expect(log).not.toContain(secret.toString('base64'));
    expect(log).toContain('luksChangeKey');
  });
});
