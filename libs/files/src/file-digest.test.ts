import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sha256File } from './file-digest.js';

describe('sha256File', () => {
  it('hashes the whole file, however it is read in chunks', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'constellation-digest-'));
    try {
      // Larger than a read stream's chunk (64 KiB), so that several chunks make up the digest.
      const data = Buffer.alloc(200_000, 'constellation');
      await writeFile(join(dir, 'file'), data);
      expect(await sha256File(join(dir, 'file'))).toBe(createHash('sha256').update(data).digest('hex'));
      await expect(sha256File(join(dir, 'missing'))).rejects.toThrow('ENOENT');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
