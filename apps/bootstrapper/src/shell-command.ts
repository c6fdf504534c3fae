import { spawn } from 'node:child_process';

/**
 * A configured command line (`--kubelet-start-command`) as a function that resolves when it exits 0.
 * Split on spaces, run without a shell: the flag names a program and plain arguments.
 */
export function shellCommand(command: string): () => Promise<void> {
  return () =>
    new Promise((resolve, reject) => {
      const [program = 'true', ...args] = command.split(' ').filter((part) => part !== '');
      const child = spawn(program, args, { stdio: 'ignore' });
      child.once('error', reject);
      child.once('close', (code) => {
        if (code === 0) resolve();
        else reject(new Error(`${command} exited with ${String(code)}`));
      });
    });
}
