import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { pathExists } from './path-exists.js';

describe('pathExists', () => {
  it('is true for a file and a directory, false for a missing path', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'path-exists-'));
    try {
      await writeFile(join(dir, 'present'), '');
      expect(await pathExists(join(dir, 'present'))).toBe(true);
      expect(await pathExists(dir)).toBe(true);
      expect(await pathExists(join(dir, 'missing'))).toBe(false);
    } finally {
      await rm(dir, { recursive: true });
    }
  });
});
