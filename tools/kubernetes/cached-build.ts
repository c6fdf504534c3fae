// What the build scripts beside this file share. Each builds into a cache directory outside the
// clone (constellationCacheDir), named by its release and a hash of its recipe, in a work
// directory `<dir>.partial-<pid>` that replaces the finished directory only when everything
// built, so that an interrupted build leaves nothing that looks complete.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { errorMessage } from '@constellation/errors';
import { isRunning, runProgram } from '@constellation/process';

/** Ends the script: `message` on stderr, exit code 1. */
export function fail(message: string): never {
  process.stderr.write(`error: ${message}\n`);
  process.exit(1);
}

/** Progress lines on stderr under `[name]`; stdout is kept for the directory a script prints. */
export function progressLog(name: string): (line: string) => void {
  return (line) => process.stderr.write(`[${name}] ${line}\n`);
}

/** `90` → `1 min 30 s`, `42.4` → `42 s`, `719.6` → `12 min 00 s` (rounded before it is split). */
export function formatSeconds(seconds: number): string {
  const whole = Math.round(seconds);
  return whole >= 60 ? `${String(Math.floor(whole / 60))} min ${String(whole % 60).padStart(2, '0')} s` : `${whole} s`;
}

export interface BuildArgs {
  rebuild: boolean;
  /** Print the directory, build nothing; exit 3 when it is not built. */
  printDir: boolean;
}

/**
 * The arguments every build script takes: `--rebuild`, its print flag (`--print-dir`, or
 * build.mjs's `--print-bin-dir`) and `--help`, which prints `usage` and exits.
 */
export function parseBuildArgs(argv: readonly string[], usage: string, printFlag = '--print-dir'): BuildArgs {
  const args = { rebuild: false, printDir: false };
  for (const arg of argv) {
    if (arg === '--rebuild') args.rebuild = true;
    else if (arg === printFlag) args.printDir = true;
    else if (arg === '--help' || arg === '-h') {
      process.stdout.write(`${usage.trim()}\n`);
      process.exit(0);
    } else fail(`unknown argument ${arg} (expected --rebuild, ${printFlag} or --help)`);
  }
  return args;
}

/** Go's version (`go env GOVERSION`): part of every recipe, as another Go builds other programs. */
export function goVersion(what: string): string {
  const result = spawnSync('go', ['env', 'GOVERSION'], { encoding: 'utf8' });
  if (result.error !== undefined || result.status !== 0)
    fail(`Go is needed to build ${what} (go 1.26 or newer on PATH): \`go env GOVERSION\` failed`);
  return result.stdout.trim();
}

/**
 * A recipe's hash (12 hex digits): `recipe`, plain data (the recipe version, release, Go version,
 * the tables of what is built and how), then the contents of `files` (go.mod and go.sum, sources
 * built, programs copied in; not where they are, so that every clone has the same recipe). Not a
 * script's own text: changing how a script logs rebuilds
 * nothing, and a change of what it builds that its data does not show raises its RECIPE_VERSION.
 */
export function recipeHash(recipe: unknown, files: readonly string[]): string {
  const hash = createHash('sha256').update(JSON.stringify(recipe));
  // Each file's length and contents, not its path: a clone elsewhere has the same recipe.
  for (const file of files) {
    const contents = readFileSync(file);
    hash.update(`\n${String(contents.length)}\n`).update(contents);
  }
  return hash.digest('hex').slice(0, 12);
}

/** Removes earlier recipes' builds of `release` in `parent` (large: hundreds of MB); other releases' stay. */
export function pruneOtherRecipes(parent: string, keep: string, release: string): void {
  if (!existsSync(parent)) return;
  for (const entry of readdirSync(parent, { withFileTypes: true })) {
    const name = entry.name;
    if (entry.isDirectory() && name !== keep && name.startsWith(`${release}-`) && !name.includes('.partial-'))
      rmSync(join(parent, name), { recursive: true, force: true });
  }
}

/** Removes the work directories (`<name>.partial-<pid>`) in `parent` of builds that were cut off. */
function removeAbandonedWork(parent: string): void {
  if (!existsSync(parent)) return;
  for (const entry of readdirSync(parent)) {
    const pid = Number(/\.partial-(\d+)$/.exec(entry)?.[1]);
    if (pid > 0 && pid !== process.pid && !isRunning(pid))
      rmSync(join(parent, entry), { recursive: true, force: true });
  }
}

/**
 * Builds `dir` in a work directory beside it (`<dir>.partial-<pid>`, after removing those of
 * builds that were cut off): `build` fills the work directory and returns the finished directory
 * inside it, which then takes `dir`'s place in one rename. A failure removes the work directory
 * and ends the script with its message, leaving `dir` as it was.
 */
export async function buildInWorkDirectory(dir: string, build: (work: string) => Promise<string>): Promise<void> {
  const work = `${dir}.partial-${String(process.pid)}`;
  removeAbandonedWork(dirname(dir));
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  let built: string;
  try {
    built = await build(work);
  } catch (error) {
    rmSync(work, { recursive: true, force: true });
    fail(errorMessage(error));
  }
  rmSync(dir, { recursive: true, force: true });
  renameSync(built, dir);
  rmSync(work, { recursive: true, force: true });
}

/** When a build started and about how long it takes in all, for "n of about m in all" lines. */
export interface Overall {
  started: number;
  totalSeconds: number;
}

/** Runs `step`, logging its start, a progress line every 30 s, and its duration. */
export async function withProgress<T>(
  log: (line: string) => void,
  label: string,
  estimateSeconds: number | undefined,
  overall: Overall | undefined,
  step: () => Promise<T>,
): Promise<T> {
  const started = Date.now();
  const since = (t: number): string => formatSeconds((Date.now() - t) / 1000);
  log(`${label}: ${estimateSeconds === undefined ? 'started' : `about ${formatSeconds(estimateSeconds)} cold`}`);
  const tick = setInterval(() => {
    const all =
      overall === undefined ? '' : `, ${since(overall.started)} of about ${formatSeconds(overall.totalSeconds)} in all`;
    log(`${label}: ${since(started)} so far${all}`);
  }, 30_000);
  try {
    const result = await step();
    log(`${label}: done in ${since(started)}`);
    return result;
  } finally {
    clearInterval(tick);
  }
}

/** The longest one program of a build may run (a cold kube-apiserver takes about 7 min here). */
const PROGRAM_BOUND_MS = 60 * 60_000;

/** Runs a program of the build (go, buildah, tar, make) with its output kept for the error. */
export async function runBuildStep(
  program: string,
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<string> {
  const { stdout } = await runProgram(program, args, { timeoutMs: PROGRAM_BOUND_MS, ...options });
  return stdout;
}
