import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';
import { describe, expect, it } from 'vitest';
import { layerRules, readPackages } from './package-layers.mjs';

const root = join(import.meta.dirname, '..', '..');

/** Lints `code` as if it were the file at `path` (relative to the checkout), with the layer rules only. */
async function lintAs(path, code) {
  const eslint = new ESLint({
    cwd: root,
    overrideConfigFile: true,
    overrideConfig: [
      { files: ['**/*.ts'], languageOptions: { parser: tseslint.parser } },
      ...layerRules(readPackages(root), []),
    ],
  });
  const [result] = await eslint.lintText(code, { filePath: join(root, path) });
  return result.messages.map((message) => message.message);
}

describe('package layers, checked by lint', () => {
  it('reads one layer for every package of the checkout', () => {
    const layers = Object.fromEntries(readPackages(root).map((p) => [p.dir, p.layer]));
    expect(layers['libs/kubeadm']).toBe('product');
    expect(layers['libs/control-plane']).toBe('harness');
    expect(layers['libs/machines']).toBe('machine');
    expect(layers['apps/bootstrapper']).toBe('node-app');
    expect(layers['apps/cli']).toBe('operator-app');
    expect(layers.tools).toBe('tool');
  });

  it('refuses a product library that imports the test harness, naming both layers', async () => {
    const messages = await lintAs(
      'libs/kubeadm/src/backwards.ts',
      "import { startControlPlane } from '@constellation/control-plane';\nexport const x = startControlPlane;\n",
    );
    expect(messages).toHaveLength(1);
    expect(messages[0]).toContain('@constellation/control-plane is layer harness');
    expect(messages[0]).toContain('code of libs/kubeadm (layer product) may import only layers product');
  });

  it('refuses type imports and subpath imports the same way', async () => {
    const messages = await lintAs(
      'libs/tpm/src/backwards.ts',
      "import type { SwtpmHarness } from '@constellation/testing';\nimport { x } from '@constellation/machines/anything';\nexport type T = SwtpmHarness | typeof x;\n",
    );
    expect(messages).toHaveLength(2);
    expect(messages[0]).toContain('@constellation/testing is layer harness');
    expect(messages[1]).toContain('@constellation/machines is layer machine');
  });

  it('lets the same library’s tests use the harness and machines', async () => {
    const code =
      "import { startControlPlane } from '@constellation/control-plane';\nexport const x = startControlPlane;\n";
    expect(await lintAs('libs/kubeadm/src/backwards.test.ts', code)).toEqual([]);
    expect(await lintAs('libs/kubeadm/src/backwards.fixture.ts', code)).toEqual([]);
  });

  it('keeps machines out of the node programs but not out of the CLI', async () => {
    const code = "import { probeKvm } from '@constellation/machines';\nexport const x = probeKvm;\n";
    const [refusal] = await lintAs('apps/bootstrapper/src/uses-machines.ts', code);
    expect(refusal).toContain('code of apps/bootstrapper (layer node-app) may import only layers product');
    expect(await lintAs('apps/cli/src/uses-machines.ts', code)).toEqual([]);
  });

  it('keeps apps out of every library, tests included', async () => {
    const code = "import { x } from '@constellation/joinservice';\nexport const y = x;\n";
    const [refusal] = await lintAs('libs/attestation/src/uses-app.test.ts', code);
    expect(refusal).toContain('@constellation/joinservice is layer node-app');
    expect(refusal).toContain('tests of libs/attestation (layer product)');
  });

  it('refuses a package whose package.json names no layer, saying where and which', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'constellation-layers-'));
    try {
      for (const [path, manifest] of [
        ['tools', { name: '@x/tools', nx: { tags: ['layer:tool'] } }],
        ['apps/a', { name: '@x/a', nx: { tags: ['layer:node-app'] } }],
        ['libs/b', { name: '@x/b', nx: { tags: ['scope:b'] } }],
      ]) {
        await mkdir(join(dir, path), { recursive: true });
        await writeFile(join(dir, path, 'package.json'), JSON.stringify(manifest));
      }
      expect(() => readPackages(dir)).toThrow(
        'libs/b/package.json: "nx": { "tags": [...] } must name exactly one layer, one of layer:product, layer:node-app',
      );
      expect(() => readPackages(dir)).toThrow('(found ["scope:b"])');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
