import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runChecked, startSwtpm, tempDirForTest } from '@constellation/testing';
import type { Swtpm } from '@constellation/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TPM_PT } from './constants.js';
import { readEkCertificate } from './ek.js';
import { TpmError, TpmParseError } from './errors.js';
import { TPMA_NV } from './nv.js';
import { SocketTransport } from './socket-transport.js';
import { Tpm } from './tpm.js';

let swtpm: Swtpm;
let tpm: Tpm;

beforeAll(async () => {
  swtpm = await startSwtpm();
  tpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port, timeoutMs: 10_000 }));
});

afterAll(async () => {
  await tpm.close();
  await swtpm.stop();
});

/** Defines an NV index with tpm2-tools (owner hierarchy, readable with its own empty auth) and writes `data`. */
async function defineIndex(index: number, data: Buffer): Promise<void> {
  const dir = await tempDirForTest();
  const hex = `0x${index.toString(16)}`;
  const env = swtpm.toolEnv;
  await runChecked(
    'tpm2_nvdefine',
    [hex, '-C', 'o', '-s', String(data.length), '-a', 'authread|authwrite|ownerread|ownerwrite'],
    {
      timeoutMs: 10_000,
      env,
    },
  );
  await writeFile(join(dir, 'data.bin'), data);
  await runChecked('tpm2_nvwrite', [hex, '-C', 'o', '-i', join(dir, 'data.bin')], { timeoutMs: 10_000, env });
}

describe('NV reads', () => {
  it('reads an index larger than the NV buffer in chunks, exactly as written', async () => {
    // swtpm: TPM_PT_NV_BUFFER_MAX 1024, TPM_PT_NV_INDEX_MAX 2048, so 2000 bytes take two reads.
    expect(await tpm.getTpmProperty(TPM_PT.NV_BUFFER_MAX)).toBe(1024);
    const data = randomBytes(2000);
    await defineIndex(0x01500010, data);
    const pub = await tpm.nvReadPublic(0x01500010);
    expect(pub.nvIndex).toBe(0x01500010);
    expect(pub.dataSize).toBe(2000);
    expect(pub.attributes & TPMA_NV.authRead).toBeTruthy();
    expect(pub.attributes & TPMA_NV.written).toBeTruthy();
    expect(pub.name).toHaveLength(34);
    const read = await tpm.nvRead(0x01500010);
    expect(read.toString('hex')).toBe(data.toString('hex'));
    // tpm2-tools reports the same name.
    const tool = await runChecked('tpm2_nvreadpublic', ['0x1500010'], { timeoutMs: 10_000, env: swtpm.toolEnv });
    expect(tool.stdout.toString()).toContain(`name: ${pub.name.toString('hex')}`);
  });

  it('refuses an index larger than the caller allows before reading it', async () => {
    await defineIndex(0x01500011, randomBytes(1500));
    await expect(tpm.nvRead(0x01500011, 1024)).rejects.toThrow(TpmParseError);
    await expect(tpm.nvRead(0x01500011, 1024)).rejects.toThrow(/holds 1500 bytes, at most 1024 allowed/);
  });

  it('returns undefined for EK certificates the TPM does not have, and throws for other errors', async () => {
    // A plain swtpm was never manufactured: no EK certificate indexes.
    expect(await readEkCertificate(tpm, 'rsa')).toBeUndefined();
    expect(await readEkCertificate(tpm, 'ecc')).toBeUndefined();
    const err = await tpm.nvRead(0x01c00002).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TpmError);
    expect((err as TpmError).rcName).toBe('TPM_RC_HANDLE');
  });

  it('rejects NV content that is not a DER certificate', async () => {
    // The index is the TCG RSA EK certificate index, filled with junk.
    await defineIndex(0x01c00002, Buffer.from('not a certificate'));
    await expect(readEkCertificate(tpm, 'rsa')).rejects.toThrow(TpmParseError);
    await runChecked('tpm2_nvundefine', ['0x1c00002', '-C', 'o'], { timeoutMs: 10_000, env: swtpm.toolEnv });
  });
});
