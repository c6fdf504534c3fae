// The layers of this repository and which may import which. Each package names its layer in its
// package.json (`"nx": { "tags": ["layer:<name>"] }`, Nx's own project tags); lint turns the table
// below into no-restricted-imports rules, so that an import running backwards fails CI.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** Every layer, what belongs in it, and the layers its code (tests aside) may import. */
export const LAYERS = {
  product: {
    is: 'a library the shipped programs are made of',
    mayImport: ['product'],
  },
  'node-app': {
    is: 'a program that runs on a node or in the cluster: bootstrapper, JoinService, node preparation',
    mayImport: ['product'],
  },
  machine: {
    is: "what mini's machines are made of: namespaces, VMs, swtpm, the metadata stand-in",
    mayImport: ['product', 'machine'],
  },
  'operator-app': {
    is: "the operator's CLI, mini included",
    mayImport: ['product', 'machine'],
  },
  harness: {
    is: 'the test harness: the shared control plane and test helpers',
    mayImport: ['product', 'machine', 'harness'],
  },
  tool: {
    is: 'build, packaging, bench and developer scripts',
    mayImport: ['product', 'machine', 'harness', 'tool'],
  },
};

/** Tests, their fixtures and benches: they may also use machines and the test harness. */
export const TEST_FILES = ['**/*.test.ts', '**/*.e2e.ts', '**/*.fixture.ts', '**/*.global-setup.ts', '**/*.bench.ts'];
const TESTS_MAY_IMPORT = ['product', 'machine', 'harness'];

/** The workspace packages under `root` with their directory (relative) and layer. */
export function readPackages(root) {
  const dirs = ['tools'];
  for (const parent of ['apps', 'libs']) {
    for (const entry of readdirSync(join(root, parent), { withFileTypes: true })) {
      if (entry.isDirectory()) dirs.push(`${parent}/${entry.name}`);
    }
  }
  return dirs.map((dir) => {
    const manifest = JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8'));
    const tags = (manifest.nx?.tags ?? []).filter((tag) => tag.startsWith('layer:'));
    const layer = tags.length === 1 ? tags[0].slice('layer:'.length) : undefined;
    if (layer === undefined || !(layer in LAYERS)) {
      throw new Error(
        `${dir}/package.json: "nx": { "tags": [...] } must name exactly one layer, one of ${Object.keys(LAYERS)
          .map((name) => `layer:${name}`)
          .join(', ')} (found ${JSON.stringify(manifest.nx?.tags ?? [])})`,
      );
    }
    return { name: manifest.name, dir, layer };
  });
}

function forbidden(packages, self, allowedLayers, fileKind) {
  return packages
    .filter((other) => other.name !== self.name && !allowedLayers.includes(other.layer))
    .map((other) => ({
      group: [other.name, `${other.name}/*`],
      message:
        `${other.name} is layer ${other.layer} (${LAYERS[other.layer].is}); ${fileKind} of ${self.dir} ` +
        `(layer ${self.layer}) may import only layers ${allowedLayers.join(', ')}. ` +
        'The table is in tools/lint/package-layers.mjs.',
    }));
}

/**
 * Flat-config entries, one for each package's code and one for its tests, each a
 * no-restricted-imports rule. `basePatterns` are the patterns every file has (the rule's options
 * are replaced, not merged, by a later entry).
 */
export function layerRules(packages, basePatterns) {
  return packages.flatMap((self) => {
    const own = LAYERS[self.layer].mayImport;
    const inTests = [...new Set([...own, ...TESTS_MAY_IMPORT])];
    const files = [`${self.dir}/**/*.ts`, `${self.dir}/**/*.mjs`];
    const rule = (patterns) => ['error', { patterns: [...basePatterns, ...patterns] }];
    return [
      {
        files,
        ignores: TEST_FILES,
        rules: { 'no-restricted-imports': rule(forbidden(packages, self, own, 'code')) },
      },
      {
        files: TEST_FILES.map((glob) => `${self.dir}/${glob}`),
        rules: { 'no-restricted-imports': rule(forbidden(packages, self, inTests, 'tests')) },
      },
    ];
  });
}
