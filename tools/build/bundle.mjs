#!/usr/bin/env node
// Bundles one app into a single file for the node image (or for `mini`), resolving our packages to
// their TypeScript sources.
//   node tools/build/bundle.mjs <entry.ts> <out.mjs>          ES module (the default)
//   node tools/build/bundle.mjs --cjs <entry.ts> <out.cjs>    CommonJS, for a Node single executable
//   node tools/build/bundle.mjs --split <entry.ts> <out.mjs>  ES module whose dynamically imported
//       code goes into chunks/ next to it (loaded only when used); the directory is the program
import { build } from 'esbuild';
import { builtinModules } from 'node:module';
import { chmod, readFile, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, extname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2);
const mode = args[0] === '--cjs' || args[0] === '--split' ? args[0] : undefined;
const [entry, outfile] = mode === undefined ? args : args.slice(1);
if (entry === undefined || outfile === undefined) {
  process.stderr.write('usage: bundle.mjs [--cjs | --split] <entry.ts> <out>\n');
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
  // V8 reads every byte of a module before running it: whitespace and comments cost each start
  // (the bootstrapper's: about a tenth). Names stay, so stack traces still name functions;
  // `node --enable-source-maps` maps their positions back to the sources.
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: 'none',
  logLevel: 'warning',
  plugins: [grpcProtoLoaderUnavailable()],
};

// Some dependencies are CommonJS and call require() for Node built-ins.
const requireBanner =
  "import { createRequire as __createRequire } from 'node:module';\nconst require = __createRequire(import.meta.url);";

if (mode === '--cjs') {
  await buildCommonJs();
} else if (mode === '--split') {
  await buildSplit();
} else {
  await build({ ...common, sourcemap: 'linked', banner: { js: `#!/usr/bin/env node\n${requireBanner}` } });
}
await chmod(outfile, 0o755);

/**
 * V8 reads (pre-parses) all of a module file before running any of it, so code that only some runs
 * need (the Kubernetes client for the first control plane's init, node preparation's OpenPGP)
 * costs every start while it sits in the entry file. Split: each dynamic import() becomes a chunk
 * in chunks/ next to the entry, read only when imported. Our workspace libraries' modules are
 * declared free of import-time side effects (true of their sources), so a module whose exports
 * nobody uses stays out even when its package's index re-exports it.
 * Everything the program can load is the output directory: entry, chunks/ (emptied first, so no
 * stale chunk remains to be measured or shipped) and source maps.
 */
async function buildSplit() {
  const outdir = dirname(outfile);
  const extension = extname(outfile);
  await rm(join(outdir, 'chunks'), { recursive: true, force: true });
  const { entryPoints, outfile: _single, ...options } = common;
  await build({
    ...options,
    entryPoints: { [basename(outfile, extension)]: entry },
    outdir,
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    outExtension: { '.js': extension },
    sourcemap: 'linked',
    plugins: [...common.plugins, workspaceLibrariesWithoutSideEffects()],
    // The shebang belongs to the entry only; esbuild keeps one from the entry source, ours has none.
    banner: { js: requireBanner },
  });
  const body = await readFile(outfile, 'utf8');
  await writeFile(outfile, `#!/usr/bin/env node\n${body}`);
}

/**
 * @grpc/grpc-js requires @grpc/proto-loader (and with it protobufjs, ~260 KiB) only inside the
 * functions that serve channelz and ORCA, which load grpc-js's own .proto files from
 * `${__dirname}/../../proto`: files a bundle does not carry (and in an ES module bundle __dirname
 * is not even defined), so those services cannot work in one, and none of our programs registers
 * them. esbuild cannot leave a require() call out of a
 * module, so every start would still read the library; it is replaced by a module whose loadSync
 * says why it is missing.
 */
function grpcProtoLoaderUnavailable() {
  return {
    name: 'grpc-proto-loader-unavailable',
    setup(pluginBuild) {
      pluginBuild.onResolve({ filter: /^@grpc\/proto-loader$/ }, (args) => ({
        path: args.path,
        namespace: 'grpc-proto-loader-unavailable',
      }));
      pluginBuild.onLoad({ filter: /.*/, namespace: 'grpc-proto-loader-unavailable' }, () => ({
        contents:
          'exports.loadSync = () => { throw new Error("@grpc/proto-loader is not bundled: grpc-js channelz and ORCA (which load .proto files at run time) are unavailable in this program"); };',
        loader: 'js',
      }));
    },
  };
}

/** Marks modules under libs/ (our sources, not node_modules) as free of import-time side effects. */
function workspaceLibrariesWithoutSideEffects() {
  return {
    name: 'workspace-libraries-without-side-effects',
    setup(pluginBuild) {
      const libs = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'libs') + '/';
      pluginBuild.onResolve({ filter: /.*/ }, async (args) => {
        if (args.pluginData === 'resolving') return undefined;
        const resolved = await pluginBuild.resolve(args.path, {
          kind: args.kind,
          importer: args.importer,
          resolveDir: args.resolveDir,
          pluginData: 'resolving',
        });
        if (resolved.errors.length > 0 || !resolved.path.startsWith(libs) || resolved.path.includes('/node_modules/'))
          return undefined;
        return { path: resolved.path, namespace: resolved.namespace, sideEffects: false };
      });
    },
  };
}

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
  const { metafile } = await build({
    ...common,
    sourcemap: false,
    metafile: true,
    plugins: [...common.plugins, builtinsAsRequire],
    // import.meta does not exist in CommonJS; the executable itself stands in for the module file.
    define: {
      'import.meta.url': '__importMetaUrl',
      'import.meta.dirname': '__dirname',
      'import.meta.filename': '__filename',
    },
  });
  const output = Object.values(metafile.outputs)[0];
  const statements = (output?.imports ?? []).filter((item) => item.kind === 'import-statement');
  if (statements.length > 0 || (output?.exports.length ?? 0) > 0) {
    const named = statements.map((item) => item.path).join(', ');
    throw new Error(`${outfile}: an import or export statement survived (${named}); it cannot run as CommonJS`);
  }
  const body = await readFile(outfile, 'utf8');
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
