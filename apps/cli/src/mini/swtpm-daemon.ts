import { mkdir, readFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';

/** Starts swtpm as a daemon (TPM state in `dir`), on `port` (data) and `port + 1` (control). Returns its pid. */
export async function startSwtpmDaemon(dir: string, port: number, host = '127.0.0.1'): Promise<number> {
  await mkdir(dir, { recursive: true });
  const pidFile = join(dir, 'swtpm.pid');
  const { spawn } = await import('node:child_process');
  await new Promise<void>((resolve, reject) => {
    const child = spawn(
      'swtpm',
      [
        'socket',
        '--tpm2',
        '--server',
        `type=tcp,bindaddr=${host},port=${port}`,
        '--ctrl',
        `type=tcp,bindaddr=${host},port=${port + 1}`,
        '--tpmstate',
        `dir=${dir}`,
        '--flags',
        'not-need-init,startup-clear',
        '--daemon',
        '--pid',
        `file=${pidFile}`,
        '--log',
        `file=${join(dir, 'swtpm.log')},level=1`,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('error', (err) => {
      reject(new Error(`cannot start swtpm (install the Debian package swtpm): ${err.message}`));
    });
    child.once('close', (code) => {
      if (code === 0) resolve();
      else reject(new Error(`swtpm exited with ${String(code)}: ${stderr.trim()}`));
    });
  });
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (await canConnect(host, port)) return Number((await readFile(pidFile, 'utf8')).trim());
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`swtpm did not listen on port ${port} within 10 s`);
}

function canConnect(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => {
      resolve(false);
    });
  });
}
