import { spawn } from 'node:child_process';

/** A program failed, was missing, or did not finish in time. */
export class ProgramFailed extends Error {
  override readonly name = 'ProgramFailed';
  /** The program's base name, e.g. "kubeadm". */
  readonly program: string;
  /** The end of what it wrote to stderr and stdout. */
  readonly output: string;
  /** What it wrote to stdout (some programs answer there and exit non-zero, as `kubectl auth can-i`). */
  readonly stdout: string;
  /** How it ended: its exit code or signal, `timeout`, or `not started`. */
  readonly ending: string;

  constructor(
    program: string,
    message: string,
    output: string,
    options?: ErrorOptions & { stdout?: string; ending?: string },
  ) {
    super(message, options);
    this.program = program;
    this.output = output;
    this.stdout = options?.stdout ?? '';
    this.ending = options?.ending ?? 'unknown';
  }
}

/** Output kept for error messages: the end of it is where programs say what went wrong. */
const KEPT_OUTPUT = 4000;

export interface RunProgramOptions {
  timeoutMs: number;
  env?: NodeJS.ProcessEnv;
  /** The directory it runs in (default: this process's). */
  cwd?: string;
  input?: string;
}

/** Runs `program` without a shell, killed after `timeoutMs`; a non-zero exit is a ProgramFailed. */
export function runProgram(
  program: string,
  args: readonly string[],
  options: RunProgramOptions,
): Promise<{ stdout: string; stderr: string }> {
  const name = program.split('/').pop() ?? program;
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, {
      env: options.env ?? process.env,
      stdio: ['pipe', 'pipe', 'pipe'],
      ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      const output = (stderr + stdout).slice(-KEPT_OUTPUT);
      reject(
        new ProgramFailed(name, `${name} ${args.join(' ')} did not finish within ${options.timeoutMs} ms`, output, {
          ending: 'timeout',
        }),
      );
    }, options.timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(
        new ProgramFailed(name, `cannot run ${name}: ${error.message}`, '', { cause: error, ending: 'not started' }),
      );
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) {
        resolve({ stdout, stderr });
        return;
      }
      const output = [stderr.trim(), stdout.trim()]
        .filter((s) => s !== '')
        .join('\n')
        .slice(-KEPT_OUTPUT);
      reject(
        new ProgramFailed(
          name,
          `${name} ${args.join(' ')} exited with ${String(code ?? signal)}: ${output || '(no output)'}`,
          output,
          { stdout, ending: String(code ?? signal) },
        ),
      );
    });
    child.stdin.end(options.input);
  });
}
