import { spawn } from 'node:child_process';
import { findOnPath } from '@constellation/swtpm';

export interface CommandResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: Buffer;
  stderr: string;
}

export interface RunCommandOptions {
  /** The process is killed after this long and the promise rejects. */
  timeoutMs: number;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  input?: Buffer | string;
}

/** Runs a program to completion with a hard time bound; never uses a shell. */
export async function runCommand(
  program: string,
  args: readonly string[],
  options: RunCommandOptions,
): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, {
      env: options.env ?? process.env,
      cwd: options.cwd,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${program} ${args.join(' ')} did not finish within ${options.timeoutMs} ms`));
    }, options.timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout: Buffer.concat(stdout), stderr: Buffer.concat(stderr).toString('utf8') });
    });
    child.stdin.end(options.input);
  });
}

/** Like runCommand, but rejects with the program's stderr when it exits non-zero. */
export async function runChecked(
  program: string,
  args: readonly string[],
  options: RunCommandOptions,
): Promise<CommandResult> {
  const result = await runCommand(program, args, options);
  if (result.code !== 0) {
    throw new Error(
      `${program} ${args.join(' ')} exited with ${String(result.code ?? result.signal)}: ${result.stderr.trim()}`,
    );
  }
  return result;
}

/**
 * Fails with a message that says how to install `program` when it is missing. Tests call this
 * instead of skipping: a missing tool is a broken machine, not a passed test.
 */
export async function requireProgram(program: string, debianPackage: string): Promise<string> {
  const found = await findOnPath(program);
  if (found === undefined) {
    throw new Error(
      `${program} is not installed; install the Debian package ${debianPackage} ` +
        '(the README test command, `npm test`, installs it for you)',
    );
  }
  return found;
}
