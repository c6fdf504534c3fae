#!/usr/bin/env node
// Bundles one app into a single file for the node image (or for `mini`), resolving our packages to
// their TypeScript sources.
//   node tools/build/bundle.mjs <entry.ts> <out.mjs>          ES module (the default)
//   node tools/build/bundle.mjs --cjs <entry.ts> <out.cjs>    CommonJS, for a Node single executable
import { build } from 'esbuild';
import { builtinModules } from 'node:module';
import { chmod, readFile, writeFile } from 'node:fs/promises';

const args = process.argv.slice(2);
const cjs = args[0] === '--cjs';
const [entry, outfile] = cjs ? args.slice(1) : args;
if (entry === undefined || outfile === undefined) {
  process.stderr.write('usage: bundle.mjs [--cjs] <entry.ts> <out>\n');
  process.exit(2);
}

const common = {
  entryPoints: [entry],
  outfile,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  conditions: ['@constellation/source'],
  legalComments: 'none',
  logLevel: 'warning',
};

if (cjs) {
  await buildCommonJs();
} else {
  await build({
    ...common,
    sourcemap: 'linked',
    // Some dependencies are CommonJS and call require() for Node built-ins.
    banner: {
      js: "#!/usr/bin/env node\nimport { createRequire as __createRequire } from 'node:module';\nconst require = __createRequire(import.meta.url);",
    },
  });
}
await chmod(outfile, 0o755);

/**
 * A Node single executable runs one CommonJS script, and esbuild cannot write CommonJS from
 * sources that use top-level await (our entry points do). So: bundle as an ES module with no
 * import statements left (built-ins become require() calls), then wrap the whole module body in
 * an async function. The module has no exports, so nothing observable changes.
 */
async function buildCommonJs() {
  const builtins = new Set(builtinModules.flatMap((name) => [name, `node:${name}`]));
  const builtinsAsRequire = {
    name: 'builtins-as-require',
    setup(pluginBuild) {
      pluginBuild.onResolve({ filter: /.*/ }, (resolved) =>
        builtins.has(resolved.path) ? { path: resolved.path, namespace: 'node-builtin' } : undefined,
      );
      pluginBuild.onLoad({ filter: /.*/, namespace: 'node-builtin' }, (loaded) => ({
        contents: `module.exports = __nodeRequire(${JSON.stringify(loaded.path)});`,
        loader: 'js',
      }));
    },
  };
  await build({
    ...common,
    sourcemap: false,
    plugins: [builtinsAsRequire],
    // import.meta does not exist in CommonJS; the executable itself stands in for the module file.
    define: {
      'import.meta.url': '__importMetaUrl',
      'import.meta.dirname': '__dirname',
      'import.meta.filename': '__filename',
    },
  });
  const body = await readFile(outfile, 'utf8');
  if (/^\s*(import|export)\s[^;]*from\s/m.test(body.replace(/^\/\/.*$/gm, ''))) {
    throw new Error(`${outfile}: an import or export statement survived; it cannot run as CommonJS`);
  }
  await writeFile(
    outfile,
    [
      "'use strict';",
      'const __nodeRequire = require;',
      "const __importMetaUrl = require('node:url').pathToFileURL(__filename).href;",
      '(async () => {',
      // Optional dependencies probe for native add-ons (ws: bufferutil) and expect "not found";
      // a single executable's require() would also print a warning for each.
      'const require = (id) => {',
      "  if (__nodeRequire('node:module').isBuiltin(id)) return __nodeRequire(id);",
      "  throw Object.assign(new Error(`Cannot find module '${id}'`), { code: 'MODULE_NOT_FOUND' });",
      '};',
      body,
      '})().catch((err) => {',
      '  process.stderr.write(`${err instanceof Error && err.stack ? err.stack : String(err)}\\n`);',
      '  process.exitCode = 1;',
      '});',
      '',
    ].join('\n'),
  );
}
