import { spawn } from 'node:child_process';
import { InvalidArgumentError } from '@commander-js/extra-typings';
import { parse } from 'shell-quote';

/** How much of a failed command's stderr its error keeps: the end, where the reason usually is. */
const STDERR_TAIL_BYTES = 2048;

/**
 * `--kubelet-start-command`: a program and its arguments, split into words as a POSIX shell would
 * (quotes and backslashes group and escape, so a path with spaces can be quoted), and run without
 * a shell. What a shell would do beyond that (variables, pipes, redirections, `;`, `&&`, comments)
 * is refused by name, rather than passed on as literal text the user did not mean; glob
 * characters stay as they are, never expanded.
 */
export function parseCommandLine(command: string): string[] {
  const refuse = (what: string): never => {
    throw new InvalidArgumentError(
      `expected a program and its arguments (quoted where they contain spaces), run without a shell, got "${command}": ${what} is not supported; put it in a script and name the script`,
    );
  };
  const words: string[] = [];
  for (const entry of parse(command, (name) => ({ variable: name }))) {
    if (typeof entry === 'string') words.push(entry);
    else if ('variable' in entry) refuse(`the variable $${String(entry.variable)}`);
    else if ('comment' in entry) refuse('a comment (#)');
    // shell-quote reports an escaped or quoted * as a glob too; nothing is expanded, so it is text.
    else if (entry.op === 'glob') words.push(entry.pattern);
    else refuse(`the shell operator ${entry.op}`);
  }
  if (words.length === 0) refuse('an empty command');
  return words;
}

/**
 * A configured command line (`--kubelet-start-command`) as a function that resolves when it exits
 * 0; otherwise it rejects with the exit status and the end of what the command wrote to stderr.
 */
export function shellCommand(command: string): () => Promise<void> {
  const [program = 'true', ...args] = parseCommandLine(command);
  return () =>
    new Promise((resolve, reject) => {
      const child = spawn(program, args, { stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = Buffer.alloc(0);
      child.stderr.on('data', (chunk: Buffer) => {
        stderr = Buffer.concat([stderr, chunk]).subarray(-STDERR_TAIL_BYTES);
      });
      child.once('error', reject);
      child.once('close', (code, signal) => {
        if (code === 0) {
          resolve();
          return;
        }
        const status = code === null ? `was killed by ${String(signal)}` : `exited with ${String(code)}`;
        const said = stderr.toString('utf8').trim();
        reject(new Error(`${command} ${status}${said === '' ? '' : `: ${said}`}`));
      });
    });
}
