import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatSeconds, recipeHash } from './cached-build.js';

describe('the build scripts’ shared parts', () => {
  it('say durations as people do, never "11 min 60 s"', () => {
    expect(formatSeconds(42.4)).toBe('42 s');
    expect(formatSeconds(59.6)).toBe('1 min 00 s');
    expect(formatSeconds(90)).toBe('1 min 30 s');
    expect(formatSeconds(719.6)).toBe('12 min 00 s');
    expect(formatSeconds(779.5)).toBe('13 min 00 s');
  });

  it('hash a recipe by its data and inputs, not by how a script is written', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'constellation-recipe-'));
    try {
      const goMod = join(dir, 'go.mod');
      await writeFile(goMod, 'module x\n');
      const recipe = { recipeVersion: 2, release: 'v1.37.2', programs: [{ name: 'kubelet' }] };
      const hash = recipeHash(recipe, [goMod]);
      expect(hash).toMatch(/^[0-9a-f]{12}$/);
      expect(recipeHash({ ...recipe }, [goMod])).toBe(hash);
      expect(recipeHash({ ...recipe, recipeVersion: 3 }, [goMod])).not.toBe(hash);
      expect(recipeHash({ ...recipe, programs: [{ name: 'kubeadm' }] }, [goMod])).not.toBe(hash);
      // The same files in another clone: the same recipe.
      const elsewhere = join(dir, 'another-clone');
      await mkdir(elsewhere);
      await writeFile(join(elsewhere, 'go.mod'), 'module x\n');
      expect(recipeHash(recipe, [join(elsewhere, 'go.mod')])).toBe(hash);
      await writeFile(goMod, 'module x\n\ngo 1.26\n');
      expect(recipeHash(recipe, [goMod])).not.toBe(hash);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
