/** Exit codes of all three programs. */
export const ExitCode = {
  /** Success, including --help and --version. */
  Ok: 0,
  /** The command ran and failed. */
  Failure: 1,
  /** The command line or the configuration it names is wrong; nothing was done. */
  Usage: 2,
} as const;

export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];
