import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { runCommand } from './run-command.js';
import type { CommandResult, RunCommandOptions } from './run-command.js';

/** The nearest ancestor of `start` with node_modules/tsx: the repository root. */
export function repoRoot(start: string = process.cwd()): string {
  let dir = resolve(start);
  for (;;) {
    if (existsSync(join(dir, 'node_modules', 'tsx'))) return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`no node_modules/tsx above ${start}; run npm install at the repository root`);
    dir = parent;
  }
}

/**
 * Runs a TypeScript entry point as its own Node process (through tsx, with our packages resolved
 * to their sources), so tests see real exit codes and real stdout/stderr.
 */
export async function runTypeScript(
  entry: string,
  args: readonly string[],
  options: RunCommandOptions,
): Promise<CommandResult> {
  const root = repoRoot(dirname(entry));
  return runCommand(
    process.execPath,
    ['--conditions=@constellation/source', '--import', 'tsx', resolve(entry), ...args],
    {
      cwd: root,
      ...options,
    },
  );
}
