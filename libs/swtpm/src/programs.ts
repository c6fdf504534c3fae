import { access, constants } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import { ProgramFailed, runProgram as runBounded } from '@constellation/process';

/** A program this library runs failed, was missing, or did not finish in time. */
export class SwtpmToolError extends Error {
  override readonly name = 'SwtpmToolError';
  /** The program that failed, e.g. "swtpm_setup". */
  readonly program: string;

  constructor(program: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.program = program;
  }
}

/** Debian package of each program, for install hints. */
const DEBIAN_PACKAGE: Readonly<Record<string, string>> = {
  swtpm: 'swtpm',
  swtpm_setup: 'swtpm-tools',
  swtpm_localca: 'swtpm-tools',
  certtool: 'gnutls-bin',
  openssl: 'openssl',
};

/** Absolute path of `program` on PATH, or undefined. */
export async function findOnPath(program: string, path = process.env['PATH'] ?? ''): Promise<string | undefined> {
  for (const dir of path.split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, program);
    try {
      await access(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not in this directory
    }
  }
  return undefined;
}

/** Absolute path of `program` on PATH; throws with an install hint when missing. */
export async function requireProgram(program: string, path = process.env['PATH'] ?? ''): Promise<string> {
  const found = await findOnPath(program, path);
  if (found !== undefined) return found;
  const pkg = DEBIAN_PACKAGE[program];
  throw new SwtpmToolError(
    program,
    `${program} is not installed${pkg === undefined ? '' : `; install the Debian package ${pkg} (apt-get install ${pkg})`}`,
  );
}

export interface RunResult {
  stdout: string;
  stderr: string;
}

/**
 * Runs `program` without a shell, killed after `timeoutMs` (@constellation/process). A non-zero
 * exit becomes a SwtpmToolError naming the program and carrying its stderr (and stdout, where
 * swtpm_setup reports some of its errors).
 */
export async function runProgram(
  program: string,
  args: readonly string[],
  options: { timeoutMs: number; env?: NodeJS.ProcessEnv },
): Promise<RunResult> {
  try {
    return await runBounded(program, args, options);
  } catch (err) {
    if (!(err instanceof ProgramFailed)) throw err;
    const { program: name, ending, output } = err;
    const message =
      ending === 'timeout'
        ? `${name} did not finish within ${options.timeoutMs} ms`
        : ending === 'not started'
          ? err.message
          : `${name} exited with ${ending}: ${output || '(no output)'}`;
    throw new SwtpmToolError(name, message, { cause: err });
  }
}
