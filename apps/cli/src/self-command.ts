import { resolve } from 'node:path';

/** Quotes an argument for a POSIX shell when it needs it. */
export function shellQuote(arg: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", `'\\''`)}'`;
}

/**
 * The command line that runs this CLI again with `args` in `workspace`, exactly as it can be
 * typed. Through `npm run mini` (which runs in the repository, the default workspace): `npm run
 * mini -- …` for mini's own commands and `npx constellation …` for the others. Otherwise this very
 * program with an explicit workspace.
 */
export function selfCommand(workspace: string, args: readonly string[]): string {
  const viaNpm = process.env['npm_lifecycle_event'] === 'mini' && resolve(workspace) === process.cwd();
  if (viaNpm && args[0] === 'mini') return ['npm', 'run', 'mini', '--', ...args.slice(1)].map(shellQuote).join(' ');
  if (viaNpm) return ['npx', 'constellation', ...args].map(shellQuote).join(' ');
  const program = process.argv[1] ?? 'constellation';
  return [process.execPath, program, '--workspace', resolve(workspace), ...args].map(shellQuote).join(' ');
}
