import { execFileSync } from 'node:child_process';
import { lstat, mkdir, readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mkdtemp, rm } from 'node:fs/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { writeFileAtomic } from './write-file-atomic.js';

const dirs: string[] = [];
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'constellation-files-'));
  dirs.push(dir);
  return dir;
}
afterAll(async () => {
  for (const dir of dirs) {
    try {
      execFileSync('umount', [join(dir, 'full')], { stdio: 'ignore' });
    } catch {
      // not mounted
    }
    await rm(dir, { recursive: true, force: true });
  }
});

const modeOf = async (path: string): Promise<number> => (await stat(path)).mode & 0o777;

describe('writeFileAtomic', () => {
  it('replaces a planted symlink at the destination instead of writing through it', async () => {
    const dir = await tempDir();
    const outside = join(dir, 'attacker-readable');
    await writeFile(outside, 'attacker file\n', { mode: 0o666 });
    await symlink(outside, join(dir, 'secret'));
    await writeFileAtomic(join(dir, 'secret'), 'master secret', { mode: 0o600 });
    expect(await readFile(outside, 'utf8')).toBe('attacker file\n');
    expect((await lstat(join(dir, 'secret'))).isFile()).toBe(true);
    expect(await modeOf(join(dir, 'secret'))).toBe(0o600);
  });

  it('gives the file exactly the mode asked for, whatever the stale file or the umask says', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'stale'), 'old', { mode: 0o666 });
    await writeFileAtomic(join(dir, 'stale'), 'new', { mode: 0o600 });
    expect(await modeOf(join(dir, 'stale'))).toBe(0o600);
    // 0666 survives the usual umask 022 only through fchmod.
    await writeFileAtomic(join(dir, 'shared'), 'x', { mode: 0o666 });
    expect(await modeOf(join(dir, 'shared'))).toBe(0o666);
  });

  it('never mixes the bytes of concurrent writers, and leaves no temporary file', async () => {
    const dir = await tempDir();
    const contents = Array.from({ length: 200 }, (_, i) => `writer ${i} `.repeat(500));
    await Promise.all(contents.map((c) => writeFileAtomic(join(dir, 'file'), c, { mode: 0o644 })));
    expect(contents).toContain(await readFile(join(dir, 'file'), 'utf8'));
    expect(await readdir(dir)).toEqual(['file']);
  });

  it('removes its temporary file when the final rename fails, and leaves the destination as it was', async () => {
    const dir = await tempDir();
    await mkdir(join(dir, 'taken'));
    await expect(writeFileAtomic(join(dir, 'taken'), 'x', { mode: 0o644 })).rejects.toThrow(/EISDIR|EEXIST|ENOTEMPTY/);
    expect(await readdir(dir)).toEqual(['taken']);
    await expect(writeFileAtomic(join(dir, 'missing', 'file'), 'x', { mode: 0o644 })).rejects.toThrow(/ENOENT/);
  });

  it('removes its temporary file when the disk is full (a real 64 KiB tmpfs; needs mount rights)', async (context) => {
    const dir = await tempDir();
    const full = join(dir, 'full');
    await mkdir(full);
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', full], { stdio: 'ignore' });
    } catch {
      context.skip('cannot mount a tmpfs here');
    }
    await writeFile(join(full, 'kubelet.env'), 'OLD=1\n');
    for (let run = 0; run < 3; run++) {
      await expect(
        writeFileAtomic(join(full, 'kubelet.env'), Buffer.alloc(256 * 1024), { mode: 0o644 }),
      ).rejects.toThrow(/ENOSPC/);
    }
    expect(await readdir(full)).toEqual(['kubelet.env']);
    expect(await readFile(join(full, 'kubelet.env'), 'utf8')).toBe('OLD=1\n');
  });
});
