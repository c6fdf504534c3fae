import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runChecked, runCommand, startSwtpm, tempDirForTest } from '@constellation/testing';
import type { Swtpm } from '@constellation/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseQuoteInfo } from './attest.js';
import { TpmError } from './errors.js';
import { publicKeyObject } from './public-area.js';
import { parseSignature, verifySignature } from './signature.js';
import { SocketTransport } from './socket-transport.js';
import { SwtpmControl } from './swtpm-control.js';
import { akTemplate, ekTemplate } from './templates.js';
import { Tpm } from './tpm.js';

let swtpm: Swtpm;
let tpm: Tpm;

beforeAll(async () => {
  swtpm = await startSwtpm();
  tpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port, timeoutMs: 10_000 }));
  await tpm.startup();
});

afterAll(async () => {
  await tpm.close();
  await swtpm.stop();
});

const sha256 = (...parts: Buffer[]): Buffer => createHash('sha256').update(Buffer.concat(parts)).digest();

/** PCR values as tpm2-tools sees them: `tpm2_pcrread sha256:<pcr>` prints "  <pcr>: 0x<HEX>". */
async function toolPcr(pcr: number): Promise<Buffer> {
  const out = await runChecked('tpm2_pcrread', [`sha256:${pcr}`], { timeoutMs: 10_000, env: swtpm.toolEnv });
  const match = /0x([0-9A-F]{64})/.exec(out.stdout.toString());
  expect(match).not.toBeNull();
  return Buffer.from(match?.[1] ?? '', 'hex');
}

describe('Tpm against a real swtpm', () => {
  it('starts up idempotently and produces random bytes of any length', async () => {
    await tpm.startup();
    const a = await tpm.getRandom(100);
    const b = await tpm.getRandom(100);
    expect(a).toHaveLength(100);
    expect(a.equals(b)).toBe(false);
  });

  it('reports the PCR banks, including SHA-256 with all 24 PCRs', async () => {
    const banks = await tpm.pcrBanks();
    expect(banks.find((bank) => bank.hash === 'sha256')?.pcrs).toEqual([...Array(24).keys()]);
  });

  it('reads all 24 PCRs even though the TPM returns at most 8 per call', async () => {
    const values = await tpm.pcrRead('sha256', [...Array(24).keys()]);
    expect([...values.keys()]).toEqual([...Array(24).keys()]);
    expect(values.get(0)).toEqual(Buffer.alloc(32));
    expect(values.get(17)).toEqual(Buffer.alloc(32, 0xff)); // locality PCRs start at all ones
  });

  it('extends PCRs exactly as tpm2_pcrread sees them and as the spec computes them', async () => {
    const before = (await tpm.pcrRead('sha256', [9])).get(9)!;
    const digest = sha256(Buffer.from('bootstrapper bundle'));
    await tpm.pcrExtend(9, [{ hash: 'sha256', digest }]);
    const after = (await tpm.pcrRead('sha256', [9])).get(9)!;
    expect(after).toEqual(sha256(before, digest));
    expect(await toolPcr(9)).toEqual(after);
  });

  it('PCR_Event hashes the data in every bank and extends', async () => {
    const before = (await tpm.pcrRead('sha256', [10])).get(10)!;
    const data = Buffer.alloc(32, 0xab);
    const digests = await tpm.pcrEvent(10, data);
    expect(digests.map((d) => d.hash)).toContain('sha256');
    expect(digests.find((d) => d.hash === 'sha256')?.digest).toEqual(sha256(data));
    expect(await toolPcr(10)).toEqual(sha256(before, sha256(data)));
  });

  it('derives the same EK and AK every time from the same seeds, and flushes them', async () => {
    for (const algorithm of ['ecc', 'rsa'] as const) {
      const first = await tpm.withPrimaryKey('endorsement', ekTemplate(algorithm), (key) => Promise.resolve(key.name));
      const second = await tpm.withPrimaryKey('endorsement', ekTemplate(algorithm), (key) => Promise.resolve(key.name));
      expect(first.equals(second)).toBe(true);
    }
    // swtpm has three object slots: without flushing, the fourth CreatePrimary would fail.
    for (let i = 0; i < 6; i++) {
      await tpm.withPrimaryKey('endorsement', akTemplate('ecc'), async (key) => {
        expect((await tpm.readPublic(key.handle)).name).toEqual(key.name);
      });
    }
  });

  it('serialises concurrent key sequences instead of running out of object memory', async () => {
    const names = await Promise.all(
      Array.from({ length: 8 }, () =>
        tpm.withPrimaryKey('endorsement', akTemplate('ecc'), (key) => Promise.resolve(key.name)),
      ),
    );
    expect(new Set(names.map((n) => n.toString('hex'))).size).toBe(1);
  });

  for (const algorithm of ['ecc', 'rsa'] as const) {
    it(`makes ${algorithm} quotes that tpm2_checkquote accepts, PCR values included`, async () => {
      const dir = await tempDirForTest();
      const nonce = await tpm.getRandom(32);
      const pcrs = [0, 9, 15];
      const { quote, pem, values } = await tpm.withPrimaryKey('endorsement', akTemplate(algorithm), async (key) => ({
        quote: await tpm.quote(key.handle, nonce, [{ hash: 'sha256', pcrs }]),
        pem: publicKeyObject(key.public).export({ type: 'spki', format: 'pem' }),
        values: await tpm.pcrRead('sha256', pcrs),
      }));
      await writeFile(join(dir, 'ak.pem'), pem);
      await writeFile(join(dir, 'quote.msg'), quote.attest);
      await writeFile(join(dir, 'quote.sig'), quote.signature);
      await writeFile(join(dir, 'pcrs.bin'), Buffer.concat(pcrs.map((pcr) => values.get(pcr)!)));
      const args = [
        '-u',
        join(dir, 'ak.pem'),
        '-m',
        join(dir, 'quote.msg'),
        '-s',
        join(dir, 'quote.sig'),
        '-g',
        'sha256',
      ];
      const ok = await runCommand(
        'tpm2_checkquote',
        [...args, '-q', nonce.toString('hex'), '-f', join(dir, 'pcrs.bin'), '-l', 'sha256:0,9,15'],
        { timeoutMs: 10_000 },
      );
      expect(ok.stderr).toBe('');
      expect(ok.code).toBe(0);
      // The independent checker also rejects a wrong nonce and wrong PCR values.
      const wrongNonce = await runCommand('tpm2_checkquote', [...args, '-q', Buffer.alloc(32).toString('hex')], {
        timeoutMs: 10_000,
      });
      expect(wrongNonce.code).not.toBe(0);
      await writeFile(join(dir, 'pcrs.bin'), Buffer.alloc(96, 1));
      const wrongPcrs = await runCommand(
        'tpm2_checkquote',
        [...args, '-q', nonce.toString('hex'), '-f', join(dir, 'pcrs.bin'), '-l', 'sha256:0,9,15'],
        {
          timeoutMs: 10_000,
        },
      );
      expect(wrongPcrs.code).not.toBe(0);
      // And our own parser agrees with it.
      const info = parseQuoteInfo(quote.attest);
      expect(info.extraData).toEqual(nonce);
      expect(info.pcrSelections).toEqual([{ hash: 'sha256', pcrs }]);
      expect(info.pcrDigest).toEqual(sha256(...pcrs.map((pcr) => values.get(pcr)!)));
    });
  }

  it('verifies its own quote signatures and rejects a flipped bit', async () => {
    await tpm.withPrimaryKey('endorsement', akTemplate('ecc'), async (key) => {
      const quote = await tpm.quote(key.handle, Buffer.alloc(32, 5), [{ hash: 'sha256', pcrs: [0] }]);
      const sig = parseSignature(quote.signature);
      expect(verifySignature(key.public, quote.attest, sig)).toBe(true);
      const tampered = Buffer.from(quote.attest);
      tampered[tampered.length - 1]! ^= 0x01;
      expect(verifySignature(key.public, tampered, sig)).toBe(false);
    });
  });

  it('turns TPM error codes into typed errors with the decoded name', async () => {
    const err = await tpm.flushContext(0x80ffffff).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TpmError);
    expect((err as TpmError).command).toBe('FlushContext');
    expect((err as TpmError).rcName).toMatch(/^TPM_RC_/);
    expect((err as TpmError).message).toMatch(/^TPM2_FlushContext failed: TPM_RC_\w+/);
    const extend = await tpm.pcrExtend(30, [{ hash: 'sha256', digest: Buffer.alloc(32) }]).catch((e: unknown) => e);
    expect(extend).toBeInstanceOf(TpmError);
  });

  it('returns PCRs to zero after a power cycle through the swtpm control channel', async () => {
    await tpm.pcrEvent(15, Buffer.from('cluster-id'));
    expect((await tpm.pcrRead('sha256', [15])).get(15)).not.toEqual(Buffer.alloc(32));
    await new SwtpmControl(swtpm.host, swtpm.ctrlPort).reset();
    await tpm.startup();
    expect((await tpm.pcrRead('sha256', [15])).get(15)).toEqual(Buffer.alloc(32));
  });
});
