import { spawn } from 'node:child_process';

export interface CryptsetupResult {
  code: number | null;
  /** The signal that ended cryptsetup, when one did (the OOM killer's SIGKILL, say). */
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs cryptsetup with a time bound; input goes to stdin (used for key material, never argv). */
export function runCryptsetup(
  program: string,
  args: readonly string[],
  timeoutMs: number,
  input?: Buffer,
): Promise<CryptsetupResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`cryptsetup ${args[0] ?? ''} did not finish within ${timeoutMs} ms`));
    }, timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`cannot run ${program}: ${err.message}`, { cause: err }));
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(input);
  });
}

/** How cryptsetup ended, for messages: "exited with 4: <stderr>" or "was killed by SIGKILL". */
export function cryptsetupOutcome(args: readonly string[], result: CryptsetupResult): string {
  const command = `cryptsetup ${args[0] ?? ''}`;
  if (result.signal !== null) return `${command} was killed by ${result.signal}`;
  return `${command} exited with ${String(result.code)}: ${result.stderr.trim()}`;
}
