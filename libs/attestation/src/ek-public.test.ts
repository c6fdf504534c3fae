import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runChecked, startSwtpm, tempDirForTest } from '@constellation/testing';
import type { Swtpm } from '@constellation/testing';
import {
  SocketTransport,
  TPM_ALG,
  TPMA_OBJECT,
  Tpm,
  ekTemplate,
  parsePublic,
  publicKeyObject,
} from '@constellation/tpm';
import type { EccPublic, RsaPublic, TpmPublic } from '@constellation/tpm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkEkPublic, ekPublicKeyHash } from './ek-public.js';
import { AttestationError } from './errors.js';

let swtpm: Swtpm;
let rsaEk: RsaPublic;
let eccEk: EccPublic;

async function createEk(algorithm: 'rsa' | 'ecc'): Promise<TpmPublic> {
  const tpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port }));
  try {
    const key = await tpm.createPrimary('endorsement', ekTemplate(algorithm));
    await tpm.flushContext(key.handle);
    return key.public;
  } finally {
    await tpm.close();
  }
}

beforeAll(async () => {
  swtpm = await startSwtpm();
  rsaEk = (await createEk('rsa')) as RsaPublic;
  eccEk = (await createEk('ecc')) as EccPublic;
});

afterAll(async () => {
  await swtpm.stop();
});

function spkiOf(pub: TpmPublic): Buffer {
  return publicKeyObject(pub).export({ type: 'spki', format: 'der' });
}

function refusal(fn: () => void): { reason: string; message: string } {
  try {
    fn();
  } catch (err) {
    if (err instanceof AttestationError) return { reason: err.reason, message: err.message };
    throw err;
  }
  throw new Error('checkEkPublic accepted the EK');
}

describe('checkEkPublic with real swtpm EKs', () => {
  for (const algorithm of ['rsa', 'ecc'] as const) {
    it(`${algorithm}: our EK is tpm2_createek's, matches its PEM key and hashes as openssl does`, async () => {
      const dir = await tempDirForTest();
      const env = swtpm.toolEnv;
      await runChecked('tpm2_createek', ['-c', 'ek.ctx', '-G', algorithm, '-u', 'ek.pub'], {
        timeoutMs: 30_000,
        env,
        cwd: dir,
      });
      await runChecked('tpm2_readpublic', ['-c', 'ek.ctx', '-f', 'pem', '-o', 'ek.pem'], {
        timeoutMs: 30_000,
        env,
        cwd: dir,
      });
      await runChecked('tpm2_flushcontext', ['-t'], { timeoutMs: 30_000, env, cwd: dir });
      const ours = algorithm === 'rsa' ? rsaEk : eccEk;
      expect(parsePublic((await readFile(join(dir, 'ek.pub'))).subarray(2))).toEqual(ours);

      // The SPKI as tpm2-tools/OpenSSL encode it, independent of our publicKeyObject.
      const spki = createPublicKey(await readFile(join(dir, 'ek.pem'), 'utf8')).export({ type: 'spki', format: 'der' });
      checkEkPublic(ours, { spki });
      const sha = await runChecked(
        'bash',
        ['-c', `openssl pkey -pubin -in ${join(dir, 'ek.pem')} -outform der | sha256sum`],
        { timeoutMs: 10_000 },
      );
      expect(ekPublicKeyHash(spki)).toBe(sha.stdout.toString().split(' ')[0]);
      expect(ekPublicKeyHash(spkiOf(ours))).toBe(ekPublicKeyHash(spki));
    });
  }
});

describe('checkEkPublic refuses', () => {
  it("an EK whose key differs from the certificate's", () => {
    const otherRsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({
      type: 'spki',
      format: 'der',
    });
    const refused = refusal(() => {
      checkEkPublic(rsaEk, { spki: otherRsa });
    });
    expect(refused.reason).toBe('ek-public');
    expect(refused.message).toMatch(
      /^EK public area RSA modulus \(2048 bits, [0-9a-f]{16}…\) differs from the EK certificate's \(2048 bits, [0-9a-f]{16}…\)$/,
    );
    const e3 = generateKeyPairSync('rsa', { modulusLength: 2048, publicExponent: 3 }).publicKey;
    const sameModulus: RsaPublic = {
      ...rsaEk,
      modulus: Buffer.from(e3.export({ format: 'jwk' }).n ?? '', 'base64url'),
    };
    expect(
      refusal(() => {
        checkEkPublic(sameModulus, { spki: e3.export({ type: 'spki', format: 'der' }) });
      }).message,
    ).toBe("EK public area RSA exponent 65537 differs from the EK certificate's 3");
    const otherEc = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({
      type: 'spki',
      format: 'der',
    });
    expect(
      refusal(() => {
        checkEkPublic(eccEk, { spki: otherEc });
      }).message,
    ).toMatch(/^EK public area ECC point \(x [0-9a-f]{16}…\) differs from the EK certificate's \(x [0-9a-f]{16}…\)$/);
    expect(
      refusal(() => {
        checkEkPublic(rsaEk, { spki: spkiOf(eccEk) });
      }).message,
    ).toBe('EK public area is an RSA key, the EK certificate holds an EC key');
    const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' }).publicKey.export({ type: 'spki', format: 'der' });
    expect(
      refusal(() => {
        checkEkPublic(eccEk, { spki: p384 });
      }).message,
    ).toBe('EK certificate key is on curve P-384, the EK public area on P-256');
    expect(
      refusal(() => {
        checkEkPublic(rsaEk, { spki: Buffer.from('garbage') });
      }).message,
    ).toMatch(/^EK certificate key is not a usable public key/);
  });

  it('an EK public area that is not the TCG default EK template', () => {
    const spki = spkiOf(rsaEk);
    const userWithAuth = { ...rsaEk, objectAttributes: rsaEk.objectAttributes | TPMA_OBJECT.userWithAuth };
    expect(
      refusal(() => {
        checkEkPublic(userWithAuth, { spki });
      }),
    ).toEqual({
      reason: 'ek-public',
      message: 'EK public area objectAttributes is 0x000300f2, the TCG default EK template has 0x000300b2',
    });
    const noPolicy = { ...rsaEk, authPolicy: Buffer.alloc(0) };
    expect(
      refusal(() => {
        checkEkPublic(noPolicy, { spki });
      }).message,
    ).toBe(
      'EK public area authPolicy is (empty), the TCG default EK template has 837197674484b3f81a90cc8d46a5d724fd52d76e06520b64f2a1da1b331469aa',
    );
    const aes256 = { ...rsaEk, symmetric: { algorithm: TPM_ALG.AES, keyBits: 256, mode: TPM_ALG.CFB } };
    expect(
      refusal(() => {
        checkEkPublic(aes256, { spki });
      }).message,
    ).toBe(
      'EK public area symmetric is algorithm 0x0006/256 bits/mode 0x0043, the TCG default EK template has algorithm 0x0006/128 bits/mode 0x0043',
    );
    const sha384 = { ...rsaEk, nameAlg: TPM_ALG.SHA384 };
    expect(
      refusal(() => {
        checkEkPublic(sha384, { spki });
      }).message,
    ).toBe('EK public area nameAlg is 0x000c, the TCG default EK template has 0x000b');
    const signing = { ...rsaEk, scheme: { scheme: TPM_ALG.RSASSA, hash: TPM_ALG.SHA256 } };
    expect(
      refusal(() => {
        checkEkPublic(signing, { spki });
      }).message,
    ).toContain('EK public area scheme is 0x0014/hash 0x000b');
    const p384 = { ...eccEk, curve: 0x0004 };
    expect(
      refusal(() => {
        checkEkPublic(p384, { spki: spkiOf(eccEk) });
      }).message,
    ).toBe('EK public area curveID is 0x0004, the TCG default EK template has 0x0003');
  });

  it('ekPublicKeyHash refuses implausible input', () => {
    expect(() => ekPublicKeyHash(Buffer.alloc(0))).toThrow(AttestationError);
    expect(() => ekPublicKeyHash(Buffer.alloc(5000))).toThrow(/5000 bytes/);
  });
});
