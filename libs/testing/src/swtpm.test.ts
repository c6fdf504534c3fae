import { X509Certificate } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { runChecked } from './run-command.js';
import { startSwtpm, startUnixSwtpm, useTestEkCa } from './swtpm.js';
import type { Swtpm, UnixSwtpm } from './swtpm.js';
import { withTimeout } from './wait-for.js';

/** TPM2_GetRandom(16), marshalled by hand: tag NO_SESSIONS, size 12, command code 0x17B. */
const GET_RANDOM_16 = Buffer.from('80010000000c0000017b0010', 'hex');

function sendRaw(address: { host: string; port: number } | { path: string }, command: Buffer): Promise<Buffer> {
  return withTimeout(
    new Promise((resolve, reject) => {
      const socket = connect(address);
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

const testCa = useTestEkCa();

describe('startSwtpm', () => {
  const started: (Swtpm | UnixSwtpm)[] = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((tpm) => tpm.stop()));
  });

  it('runs a real TPM 2.0 that answers raw commands on its port', async () => {
    const tpm = await startSwtpm();
    started.push(tpm);
    const response = await sendRaw({ host: tpm.host, port: tpm.port }, GET_RANDOM_16);
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
    const response = await sendRaw({ host: b.host, port: b.port }, GET_RANDOM_16);
    expect(response.readUInt32BE(6)).toBe(0);
  });

  it('runs on owner-only unix sockets that tpm2-tools reaches too', async () => {
    const tpm = await startUnixSwtpm();
    started.push(tpm);
    expect(statSync(tpm.dataSocket).mode & 0o777).toBe(0o600);
    expect(statSync(tpm.ctrlSocket).mode & 0o777).toBe(0o600);
    const response = await sendRaw({ path: tpm.dataSocket }, GET_RANDOM_16);
    expect(response.readUInt32BE(6)).toBe(0);
    const result = await runChecked('tpm2_getrandom', ['--hex', '8'], { timeoutMs: 10_000, env: tpm.toolEnv });
    expect(result.stdout.toString('utf8')).toMatch(/^[0-9a-f]{16}$/);
    await tpm.stop();
    expect(existsSync(tpm.dataSocket)).toBe(false);
  });

  it('manufactures the TPM with an EK certificate from the test CA when asked', async () => {
    const ca = testCa();
    const tpm = await startSwtpm({ manufacture: { ca, vmid: 'harness-node' } });
    started.push(tpm);
    const cert = new X509Certificate(await readFile(tpm.manufactured!.ekRsaCertDerPath));
    expect(cert.subject).toBe('CN=harness-node');
    expect(cert.verify(new X509Certificate(await readFile(ca.intermediateCertPath)).publicKey)).toBe(true);
    // The certificate is in the TPM's NV, where tpm2-tools finds it.
    const nv = await runChecked('tpm2_nvreadpublic', ['0x1c00002'], { timeoutMs: 10_000, env: tpm.toolEnv });
    expect(nv.stdout.toString()).toContain('0x1c00002');
  });
});
