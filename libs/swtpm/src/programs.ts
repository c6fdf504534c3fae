import { spawn } from 'node:child_process';
import { access, constants } from 'node:fs/promises';
import { delimiter, join } from 'node:path';

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

/** Output kept for error messages: the end of it is where tools say what went wrong. */
const MAX_OUTPUT_IN_ERROR = 4000;

/**
 * Runs `program` without a shell, killed after `timeoutMs`. A non-zero exit becomes a
 * SwtpmToolError naming the program and carrying its stderr (and stdout, where swtpm_setup
 * reports some of its errors).
 */
export function runProgram(
  program: string,
  args: readonly string[],
  options: { timeoutMs: number; env?: NodeJS.ProcessEnv },
): Promise<RunResult> {
  const name = program.split('/').pop() ?? program;
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new SwtpmToolError(name, `${name} did not finish within ${options.timeoutMs} ms`));
    }, options.timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(new SwtpmToolError(name, `cannot run ${name}: ${err.message}`, { cause: err }));
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) {
        resolve({ stdout, stderr });
        return;
      }
      const output = [stderr.trim(), stdout.trim()].filter((s) => s !== '').join('\n');
      reject(
        new SwtpmToolError(
          name,
          `${name} exited with ${String(code ?? signal)}: ${output.slice(-MAX_OUTPUT_IN_ERROR) || '(no output)'}`,
        ),
      );
    });
  });
}
