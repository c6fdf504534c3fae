import { copyFile, chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sha256File } from '@constellation/files';
import { bundleScript, entryPoint } from './programs.js';
import type { Program } from './programs.js';
import { runTool } from './run-tool.js';

/** The fuse Node's single-executable support looks for (Node's documented sentinel). */
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

export interface ExecutableOptions {
  /** The Node.js binary the executable is made from; the one running this build by default. */
  nodeBinary?: string;
}

/**
 * Builds one program as a Node single executable application: its entry point bundled as
 * CommonJS pieces (`bundle.mjs --sea`: the main script, and chunks as assets it compiles when
 * first required), prepared as a blob (with V8's code cache for the main script and each piece,
 * so it starts faster), injected into a stripped copy of the Node.js binary with postject. Returns the executable's path (`<outDir>/<command>`).
 *
 * The pieces are always rebuilt; the injection (the slow part) is skipped when the pieces, the
 * Node.js binary and postject are byte-identical to the last build's.
 */
export async function buildExecutable(
  program: Program,
  outDir: string,
  options: ExecutableOptions = {},
): Promise<string> {
  const nodeBinary = options.nodeBinary ?? process.execPath;
  const work = join(outDir, '.work', program.command);
  await mkdir(work, { recursive: true });
  const pieces = join(work, 'pieces');
  await runTool(process.execPath, [bundleScript, '--sea', entryPoint(program), pieces]);
  const main = join(pieces, 'main.cjs');
  const assets = JSON.parse(await readFile(join(pieces, 'assets.json'), 'utf8')) as Record<string, string>;

  const executable = join(outDir, program.command);
  const inputsFile = join(work, 'inputs.sha256');
  const outputFile = join(work, 'executable.sha256');
  const postjectCli = createRequire(import.meta.url).resolve('postject/dist/cli.js');
  // This file is the recipe: a change to it must rebuild.
  const recipe = fileURLToPath(import.meta.url);
  const inputs = (
    await Promise.all([main, ...Object.values(assets).sort(), nodeBinary, postjectCli, recipe].map(sha256File))
  ).join('\n');
  if (
    (await readIfExists(inputsFile)) === inputs &&
    (await readIfExists(outputFile)) === (await hashIfExists(executable))
  ) {
    return executable;
  }

  const blob = join(work, `${program.command}.blob`);
  const seaConfig = join(work, 'sea-config.json');
  const caches = await pieceCodeCaches(nodeBinary, pieces, assets);
  await writeFile(
    seaConfig,
    JSON.stringify({
      main,
      assets: { ...assets, ...caches },
      output: blob,
      disableExperimentalSEAWarning: true,
      useCodeCache: true,
    }),
  );
  await runTool(nodeBinary, ['--experimental-sea-config', seaConfig]);
  await rm(executable, { force: true });
  await copyFile(nodeBinary, executable);
  await chmod(executable, 0o755);
  // Symbols only help debuggers of Node.js itself; stripped, the executable is 12 MB smaller.
  // (Stripping after injection would drop the blob.)
  await runTool('strip', ['--strip-all', executable]);
  await runTool(process.execPath, [postjectCli, executable, 'NODE_SEA_BLOB', blob, '--sentinel-fuse', SEA_FUSE]);
  await writeFile(outputFile, await sha256File(executable));
  await writeFile(inputsFile, inputs);
  return executable;
}

/**
 * Run by the Node.js binary the executable is made of, as the executable runs it (no options):
 * V8 takes a code cache only from the same V8 with the same flags. Compiles each piece as the
 * main script's loader does and writes what V8 cached next to it.
 */
const PRODUCE_CODE_CACHES = `
const { compileFunction } = require('node:vm');
const { readFileSync, writeFileSync } = require('node:fs');
const { parameters, pieces } = JSON.parse(process.argv[1]);
for (const [key, path] of Object.entries(pieces)) {
  const compiled = compileFunction(readFileSync(path, 'utf8'), parameters, { filename: key, produceCachedData: true });
  writeFileSync(path + '.v8cache', compiled.cachedData ?? new Uint8Array(0));
}`;

/**
 * V8's code cache for every piece but the main script (the blob's `useCodeCache` covers that):
 * asset `<key>.v8cache`, which the loader gives V8 when it compiles the piece. Parsing the pieces
 * the bootstrapper loads before it listens (grpc-js above all) took 11 to 14 ms of its start
 * here, 1.5 to 2 ms with the cache. Made after the inputs are hashed: V8's output need not be
 * byte-identical from one build to the next, and it follows from the pieces and the binary.
 */
async function pieceCodeCaches(
  nodeBinary: string,
  pieces: string,
  assets: Record<string, string>,
): Promise<Record<string, string>> {
  const parameters = JSON.parse(await readFile(join(pieces, 'parameters.json'), 'utf8')) as string[];
  const env = { ...process.env };
  delete env['NODE_OPTIONS'];
  await runTool(nodeBinary, ['-e', PRODUCE_CODE_CACHES, JSON.stringify({ parameters, pieces: assets })], { env });
  const caches: Record<string, string> = {};
  for (const [key, path] of Object.entries(assets)) caches[`${key}.v8cache`] = `${path}.v8cache`;
  return caches;
}

async function readIfExists(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch {
    return undefined;
  }
}

async function hashIfExists(path: string): Promise<string | undefined> {
  try {
    return await sha256File(path);
  } catch {
    return undefined;
  }
}
