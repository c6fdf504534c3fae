import { resolve } from 'node:path';

/** Quotes an argument for a POSIX shell when it needs it. */
function shellQuote(arg: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", `'\\''`)}'`;
}

/**
 * The command line that runs this CLI again with `args` in `workspace`, exactly as it can be
 * typed: `npm run mini -- …` when the user came through `npm run mini` (which runs in the
 * repository, the default workspace), otherwise this very program with an explicit workspace.
 */
export function selfCommand(workspace: string, args: readonly string[]): string {
  if (process.env['npm_lifecycle_event'] === 'mini' && resolve(workspace) === process.cwd())
    return ['npm', 'run', 'mini', '--', ...args.slice(1)].map(shellQuote).join(' ');
  const program = process.argv[1] ?? 'constellation';
  return [process.execPath, program, '--workspace', resolve(workspace), ...args].map(shellQuote).join(' ');
}
