#!/usr/bin/env node
// Bundles one app into a single file for the node image (or for `mini`), resolving our packages to
// their TypeScript sources.
//   node tools/build/bundle.mjs <entry.ts> <out.mjs>          ES module (the default)
//   node tools/build/bundle.mjs --sea <entry.ts> <outdir>     CommonJS pieces for a Node single executable
//   node tools/build/bundle.mjs --split <entry.ts> <out.mjs>  ES module whose dynamically imported
//       code goes into chunks/ next to it (loaded only when used); the directory is the program
import { build, transform } from 'esbuild';
import { builtinModules } from 'node:module';
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import process from 'node:process';
import { basename, dirname, extname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2);
const mode = args[0] === '--sea' || args[0] === '--split' ? args[0] : undefined;
const [entry, outfile] = mode === undefined ? args : args.slice(1);
if (entry === undefined || outfile === undefined) {
  process.stderr.write('usage: bundle.mjs [--sea | --split] <entry.ts> <out>\n');
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

if (mode === '--sea') {
  await buildSingleExecutable();
} else if (mode === '--split') {
  await buildSplit();
} else {
  await build({ ...common, sourcemap: 'linked', banner: { js: `#!/usr/bin/env node\n${requireBanner}` } });
}
if (mode !== '--sea') await chmod(outfile, 0o755);

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
  await build({
    ...splitBuildOptions(basename(outfile, extension), outdir, extension),
    sourcemap: 'linked',
    // The shebang belongs to the entry only; esbuild keeps one from the entry source, ours has none.
    banner: { js: requireBanner },
  });
  const body = await readFile(outfile, 'utf8');
  await writeFile(outfile, `#!/usr/bin/env node\n${body}`);
}

/**
 * The options of a build that writes the entry as `<entryName><extension>` in `outdir` and the code
 * it imports dynamically (with what several pieces share) as chunks/ beside it.
 */
function splitBuildOptions(entryName, outdir, extension, plugins = []) {
  const { entryPoints: _entryPoints, outfile: _outfile, ...options } = common;
  return {
    ...options,
    entryPoints: { [entryName]: entry },
    outdir,
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    outExtension: { '.js': extension },
    plugins: [...common.plugins, ...plugins, workspaceLibrariesWithoutSideEffects()],
  };
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
 * A Node single executable runs one CommonJS script and cannot import files, so the program is
 * split as for --split (V8 pre-parses every byte of a script it runs: one 4 MiB script cost the
 * bootstrapper's single executable 60 ms and 10 MiB at each start against the split bundle,
 * measured) and each piece is turned into CommonJS: the entry becomes the executable's main
 * script (`main.cjs`), the chunks its assets (`chunks/`), compiled by the main script only when
 * first required. Built-ins become require() calls; import.meta stands for the executable itself.
 * Writes the directory `out`: main.cjs, chunks/ and assets.json (asset key → file, for the
 * executable's configuration).
 */
async function buildSingleExecutable() {
  const outdir = outfile;
  await rm(outdir, { recursive: true, force: true });
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
  const { metafile, outputFiles } = await build({
    // ES modules still, until transformed below; named for what they become.
    ...splitBuildOptions('main', outdir, '.cjs', [builtinsAsRequire]),
    sourcemap: false,
    metafile: true,
    write: false,
    define: {
      'import.meta.url': '__importMetaUrl',
      'import.meta.dirname': '__dirname',
      'import.meta.filename': '__filename',
    },
  });
  const keyOf = (path) => relative(resolve(outdir), resolve(path));
  const pieces = new Set(Object.keys(metafile.outputs).map(keyOf));
  for (const [path, output] of Object.entries(metafile.outputs)) {
    // require() of what the bundle lacks (optional add-ons) stays and fails as "not found" at run time.
    const foreign = output.imports.filter((item) => item.kind !== 'require-call' && !pieces.has(keyOf(item.path)));
    if (foreign.length > 0) {
      const named = foreign.map((item) => item.path).join(', ');
      throw new Error(`${path}: imports ${named}, which a single executable cannot load`);
    }
  }
  const assets = {};
  let main;
  for (const file of outputFiles) {
    const key = keyOf(file.path);
    // Dynamic imports become require() calls, loaded on first use like the import was.
    const { code } = await transform(file.text, {
      format: 'cjs',
      platform: 'node',
      target: 'node20',
      supported: { 'dynamic-import': false },
      minifyWhitespace: true,
      minifySyntax: true,
      legalComments: 'none',
      sourcefile: key,
    });
    if (key === 'main.cjs') {
      main = code;
      continue;
    }
    await mkdir(dirname(file.path), { recursive: true });
    // Modules are strict; a compiled function body is only when it says so (the main script does).
    await writeFile(file.path, `'use strict';${code}`);
    assets[key] = resolve(file.path);
  }
  if (main === undefined) throw new Error(`${entry}: esbuild wrote no main.cjs`);
  await mkdir(outdir, { recursive: true });
  await writeFile(join(outdir, 'assets.json'), `${JSON.stringify(assets, null, 2)}\n`);
  // What every piece's code may refer to without defining it.
  const parameters = ['exports', 'require', 'module', '__nodeRequire', '__importMetaUrl', '__filename', '__dirname'];
  // For whoever makes the pieces' code caches: they are only valid for the same wrapper.
  await writeFile(join(outdir, 'parameters.json'), `${JSON.stringify(parameters)}\n`);
  await writeFile(
    join(outdir, 'main.cjs'),
    [
      singleExecutableLoader(parameters),
      `__require('main.cjs', function (${parameters.join(', ')}) {`,
      main,
      '});',
      '',
    ].join('\n'),
  );
}

/**
 * The head of a single executable's main script: a CommonJS module table. The main script runs
 * its own piece through it; the others are the executable's assets, compiled on first require(),
 * with V8's code cache for the piece (asset `<key>.v8cache`) where the build made one: V8 then
 * skips parsing the piece (a rejected or missing cache only costs the parse;
 * CONSTELLATION_DEBUG_CODE_CACHE=1 says which it was, per piece, on stderr).
 */
function singleExecutableLoader(parameters) {
  return `'use strict';
const __nodeRequire = require;
const __importMetaUrl = require('node:url').pathToFileURL(__filename).href;
const __modules = new Map();
const __codeCache = (key) => {
  try {
    return new Uint8Array(require('node:sea').getRawAsset(key + '.v8cache'));
  } catch {
    return undefined;
  }
};
const __require = (key, body) => {
  const loaded = __modules.get(key);
  if (loaded !== undefined) return loaded.exports;
  if (body === undefined) {
    const cachedData = __codeCache(key);
    body = require('node:vm').compileFunction(require('node:sea').getAsset(key, 'utf8'), ${JSON.stringify(parameters)}, { filename: key, cachedData });
    // Whether V8 took each piece's cache, for whoever wonders why a start is slow.
    if (process.env.CONSTELLATION_DEBUG_CODE_CACHE === '1')
      process.stderr.write('code cache ' + key + ': ' + (cachedData === undefined ? 'none' : body.cachedDataRejected ? 'rejected' : 'taken') + String.fromCharCode(10));
  }
  const module = { exports: {} };
  __modules.set(key, module);
  const requireFrom = (id) => {
    if (id.startsWith('./') || id.startsWith('../')) return __require(require('node:path').posix.join(require('node:path').posix.dirname(key), id));
    if (require('node:module').isBuiltin(id)) return __nodeRequire(id);
    // Optional dependencies probe for native add-ons (ws: bufferutil) and expect "not found".
    throw Object.assign(new Error(\`Cannot find module '\${id}'\`), { code: 'MODULE_NOT_FOUND' });
  };
  body.call(module.exports, module.exports, requireFrom, module, __nodeRequire, __importMetaUrl, __filename, __dirname);
  return module.exports;
};
`;
}
