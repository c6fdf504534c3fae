import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { createTempDir, repoRoot, runChecked } from '@constellation/testing';
import { describe, expect, it } from 'vitest';

// tools/build/bundle.mjs builds this program; its stand-in for @grpc/proto-loader is checked here.
describe('bundle.mjs', () => {
  it('leaves @grpc/proto-loader and protobufjs out: channelz cannot work in a bundle anyway', async () => {
    const dir = await createTempDir('constellation-bundle-');
    try {
      const out = join(dir.path, 'program.mjs');
      const root = repoRoot();
      await runChecked(
        process.execPath,
        [join(root, 'tools/build/bundle.mjs'), '--split', join(root, 'tools/build/fixtures/grpc-channelz.ts'), out],
        { timeoutMs: 60_000 },
      );
      const chunks = await readdir(join(dir.path, 'chunks')).catch(() => []);
      const files = [out, ...chunks.map((name) => join(dir.path, 'chunks', name))];
      const code = (await Promise.all(files.filter((f) => f.endsWith('.mjs')).map((f) => readFile(f, 'utf8')))).join(
        '',
      );
      expect(code).toContain('grpc-js/build/src/channelz.js');
      expect(code).not.toContain('node_modules/protobufjs/');
      const run = await runChecked(process.execPath, [out], { timeoutMs: 30_000 });
      // In an ES module bundle grpc-js's `${__dirname}/../../proto` fails before the loader is called.
      expect(String(run.stdout)).toMatch(/__dirname is not defined|@grpc\/proto-loader is not bundled/);
    } finally {
      await dir.remove();
    }
  }, 90_000);
});
