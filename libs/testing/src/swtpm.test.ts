import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { runChecked } from './run-command.js';
import { startSwtpm } from './swtpm.js';
import type { Swtpm } from './swtpm.js';
import { withTimeout } from './wait-for.js';

/** TPM2_GetRandom(16), marshalled by hand: tag NO_SESSIONS, size 12, command code 0x17B. */
const GET_RANDOM_16 = Buffer.from('80010000000c0000017b0010', 'hex');

function sendRaw(host: string, port: number, command: Buffer): Promise<Buffer> {
  return withTimeout(
    new Promise((resolve, reject) => {
      const socket = connect({ host, port });
      const chunks: Buffer[] = [];
      socket.once('connect', () => socket.write(command));
      socket.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        const all = Buffer.concat(chunks);
        if (all.length >= 10 && all.length >= all.readUInt32BE(2)) {
          socket.destroy();
          resolve(all);
        }
      });
      socket.once('error', reject);
    }),
    5_000,
    'raw TPM command round trip',
  );
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('startSwtpm', () => {
  const started: Swtpm[] = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((tpm) => tpm.stop()));
  });

  it('runs a real TPM 2.0 that answers raw commands on its port', async () => {
    const tpm = await startSwtpm();
    started.push(tpm);
    const response = await sendRaw(tpm.host, tpm.port, GET_RANDOM_16);
    expect(response.readUInt16BE(0)).toBe(0x8001);
    expect(response.readUInt32BE(6)).toBe(0); // TPM_RC_SUCCESS
    expect(response.readUInt16BE(10)).toBe(16);
    expect(tpm.ctrlPort).toBe(tpm.port + 1);
  });

  it('works with tpm2-tools through the TCTI it advertises', async () => {
    const tpm = await startSwtpm();
    started.push(tpm);
    const result = await runChecked('tpm2_getrandom', ['--hex', '8'], { timeoutMs: 10_000, env: tpm.toolEnv });
    expect(result.stdout.toString('utf8')).toMatch(/^[0-9a-f]{16}$/);
  });

  it('runs independent instances side by side and cleans up after stop', async () => {
    const [a, b] = await Promise.all([startSwtpm(), startSwtpm()]);
    started.push(a, b);
    expect(a.port).not.toBe(b.port);
    expect(a.stateDir).not.toBe(b.stateDir);
    await a.stop();
    expect(isRunning(a.pid)).toBe(false);
    expect(existsSync(a.stateDir)).toBe(false);
    await a.stop(); // idempotent
    const response = await sendRaw(b.host, b.port, GET_RANDOM_16);
    expect(response.readUInt32BE(6)).toBe(0);
  });
});
