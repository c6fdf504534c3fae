import { spawn } from 'node:child_process';

export interface KubeadmRunOptions {
  /** The kubeadm binary: a path, or a name looked up on PATH. */
  program: string;
  timeoutMs: number;
  env?: NodeJS.ProcessEnv;
  /** Each output line as it arrives (for the node's log and Init progress). */
  onOutput?: (line: string) => void;
}

/** kubeadm exited non-zero or timed out; carries its combined output for the logs. */
export class KubeadmError extends Error {
  override readonly name = 'KubeadmError';
  readonly output: string;

  constructor(message: string, output: string) {
    super(message);
    this.output = output;
  }
}

/** Runs `kubeadm <args>` with a time bound and returns its combined output. */
export function runKubeadm(args: readonly string[], options: KubeadmRunOptions): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(options.program, args, { env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    let partial = '';
    const onData = (chunk: Buffer): void => {
      const text = chunk.toString();
      output += text;
      const lines = (partial + text).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) options.onOutput?.(line);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new KubeadmError(`kubeadm ${args[0] ?? ''} did not finish within ${options.timeoutMs} ms`, output));
    }, options.timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(new KubeadmError(`cannot run kubeadm (${options.program}): ${err.message}`, output));
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      if (partial !== '') options.onOutput?.(partial);
      if (code === 0) resolve(output);
      else {
        const last = output.trim().split('\n').slice(-3).join(' | ');
        reject(new KubeadmError(`kubeadm ${args[0] ?? ''} failed with exit code ${String(code)}: ${last}`, output));
      }
    });
  });
}
