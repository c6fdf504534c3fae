import { CommanderError } from '@commander-js/extra-typings';
import type { Command } from '@commander-js/extra-typings';
import { ExitCode } from './exit-code.js';
import { terminalSafe } from './terminal-safe.js';
import { NotBuiltYetError, UsageError } from './usage-error.js';

export interface ProgramIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
}

const processIo: ProgramIo = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
};

/** Anything commander can run, whatever its typed options. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- commander's typed commands differ per program
type AnyCommand = Command<any, any, any>;

/**
 * Runs a commander program and returns the exit code instead of exiting: 0 for success, --help
 * and --version; 2 for command-line errors (unknown flag, missing or invalid value, UsageError);
 * 1 for failures. Commander prints its own usage errors; everything else is printed here as
 * "error: <message>".
 */
export async function runProgram(
  program: AnyCommand,
  argv: readonly string[],
  io: ProgramIo = processIo,
): Promise<ExitCode> {
  configure(program, io);
  try {
    await program.parseAsync(argv);
    return ExitCode.Ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.help' || err.code === 'commander.version') {
        return ExitCode.Ok;
      }
      return err.exitCode === 0 ? ExitCode.Ok : ExitCode.Usage;
    }
    if (err instanceof UsageError) {
      io.stderr(`error: ${terminalSafe(err.message)}\n(run with --help for usage)\n`);
      return ExitCode.Usage;
    }
    if (err instanceof NotBuiltYetError) {
      io.stderr(`error: ${err.message}\n`);
      return ExitCode.Failure;
    }
    io.stderr(`error: ${terminalSafe(describe(err))}\n`);
    return ExitCode.Failure;
  }
}

function configure(command: AnyCommand, io: ProgramIo): void {
  command.exitOverride();
  command.configureOutput({ writeOut: io.stdout, writeErr: io.stderr });
  command.showHelpAfterError('(run with --help for usage)');
  for (const sub of command.commands) configure(sub as AnyCommand, io);
}

function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  let text = err.message;
  let cause: unknown = err.cause;
  for (let depth = 0; cause instanceof Error && depth < 5; depth++) {
    text += `: ${cause.message}`;
    cause = cause.cause;
  }
  return text;
}

/**
 * An entry point's whole body: runs the program and sets `process.exitCode` when it ends.
 * Entry points do not await at top level because a single executable runs them as CommonJS.
 */
export function startProgram(program: AnyCommand, argv: readonly string[] = process.argv): void {
  void runProgram(program, argv).then((code) => {
    process.exitCode = code;
  });
}
