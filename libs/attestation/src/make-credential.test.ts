import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runChecked, runCommand, startSwtpm, tempDirForTest } from '@constellation/testing';
import type { Swtpm } from '@constellation/testing';
import { TPM_ALG, TPMA_OBJECT, TpmWriter, ekTemplate, parsePublic, publicName } from '@constellation/tpm';
import type { TpmPublic } from '@constellation/tpm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AttestationError } from './errors.js';
import { makeCredential } from './make-credential.js';
import type { Credential } from './make-credential.js';

let swtpm: Swtpm;

beforeAll(async () => {
  swtpm = await startSwtpm();
});

afterAll(async () => {
  await swtpm.stop();
});

const TOOL_TIMEOUT_MS = 30_000;

/** Runs a tpm2-tools command, then flushes transient objects (swtpm has no resource manager, three slots). */
async function tool(program: string, args: string[], cwd: string): Promise<string> {
  try {
    const out = await runChecked(program, args, { timeoutMs: TOOL_TIMEOUT_MS, env: swtpm.toolEnv, cwd });
    return out.stdout.toString();
  } finally {
    await runChecked('tpm2_flushcontext', ['-t'], { timeoutMs: TOOL_TIMEOUT_MS, env: swtpm.toolEnv, cwd });
  }
}

/** The TPM2B_PUBLIC that tpm2-tools writes with -u: drop the size. */
async function readTpm2bPublic(path: string): Promise<TpmPublic> {
  return parsePublic((await readFile(path)).subarray(2));
}

/** tpm2-tools' credential file: magic 0xBADCC0DE, version 1, TPM2B_ID_OBJECT, TPM2B_ENCRYPTED_SECRET. */
function credentialFile(credential: Credential): Buffer {
  return new TpmWriter()
    .u32(0xbadcc0de)
    .u32(1)
    .sized(credential.credentialBlob)
    .sized(credential.encryptedSecret)
    .toBuffer();
}

type EkKind = 'rsa' | 'ecc' | 'ecc-p384';

/** An EK (TCG default template, or P-384 with the same attributes and policy) and an ECC AK beside it. */
async function createEkAndAk(kind: EkKind, dir: string): Promise<{ ek: TpmPublic; akName: Buffer }> {
  if (kind === 'ecc-p384') {
    const policy = ekTemplate('ecc').authPolicy;
    await writeFile(join(dir, 'ek-policy.bin'), policy);
    await tool(
      'tpm2_createprimary',
      [
        '-C',
        'e',
        '-G',
        'ecc384:aes128cfb',
        '-g',
        'sha256',
        '-a',
        'fixedtpm|fixedparent|sensitivedataorigin|adminwithpolicy|restricted|decrypt',
        '-L',
        'ek-policy.bin',
        '-c',
        'ek.ctx',
      ],
      dir,
    );
    await tool('tpm2_readpublic', ['-c', 'ek.ctx', '-o', 'ek.pub'], dir);
  } else {
    await tool('tpm2_createek', ['-c', 'ek.ctx', '-G', kind, '-u', 'ek.pub'], dir);
  }
  await tool(
    'tpm2_createak',
    ['-C', 'ek.ctx', '-c', 'ak.ctx', '-G', 'ecc', '-g', 'sha256', '-s', 'ecdsa', '-u', 'ak.pub', '-n', 'ak.name'],
    dir,
  );
  const akName = await readFile(join(dir, 'ak.name'));
  // Our name computation agrees with the TPM's.
  expect(publicName(await readTpm2bPublic(join(dir, 'ak.pub')))).toEqual(akName);
  return { ek: await readTpm2bPublic(join(dir, 'ek.pub')), akName };
}

/**
 * tpm2_activatecredential with the EK authorised by PolicySecret(TPM_RH_ENDORSEMENT) in a policy
 * session. Returns the recovered secret, or the tool's error output.
 */
async function activate(dir: string, credFile: string): Promise<{ secret?: Buffer; error?: string }> {
  const env = swtpm.toolEnv;
  await runChecked('tpm2_startauthsession', ['--policy-session', '-S', 'session.ctx'], {
    timeoutMs: TOOL_TIMEOUT_MS,
    env,
    cwd: dir,
  });
  try {
    await runChecked('tpm2_policysecret', ['-S', 'session.ctx', '-c', 'e'], {
      timeoutMs: TOOL_TIMEOUT_MS,
      env,
      cwd: dir,
    });
    const result = await runCommand(
      'tpm2_activatecredential',
      ['-c', 'ak.ctx', '-C', 'ek.ctx', '-i', credFile, '-o', 'secret.out', '-P', 'session:session.ctx'],
      { timeoutMs: TOOL_TIMEOUT_MS, env, cwd: dir },
    );
    if (result.code !== 0) return { error: result.stderr };
    return { secret: await readFile(join(dir, 'secret.out')) };
  } finally {
    // A failed activation leaves the policy session loaded; free it and the transient objects.
    await runCommand('tpm2_flushcontext', ['session.ctx'], { timeoutMs: TOOL_TIMEOUT_MS, env, cwd: dir });
    await runChecked('tpm2_flushcontext', ['-t'], { timeoutMs: TOOL_TIMEOUT_MS, env, cwd: dir });
  }
}

describe('makeCredential activates in a real TPM (tpm2_activatecredential against swtpm)', () => {
  for (const kind of ['rsa', 'ecc', 'ecc-p384'] as const) {
    it(`${kind} EK: the TPM recovers the secret for the AK it was made for, and refuses it for another AK`, async () => {
      const dir = await tempDirForTest();
      const { ek, akName } = await createEkAndAk(kind, dir);
      if (kind === 'ecc-p384') expect(ek.type === 'ecc' && ek.x.length).toBe(48);

      const secret = randomBytes(32);
      await writeFile(join(dir, 'cred.in'), credentialFile(makeCredential(ek, akName, secret)));
      expect(await activate(dir, 'cred.in')).toEqual({ secret });

      // Made for another object's name: the integrity HMAC covers the name, so the TPM refuses.
      const otherName = Buffer.concat([Buffer.from('000b', 'hex'), createHash('sha256').update('other AK').digest()]);
      await writeFile(join(dir, 'cred.other'), credentialFile(makeCredential(ek, otherName, secret)));
      const refused = await activate(dir, 'cred.other');
      expect(refused.secret).toBeUndefined();
      expect(refused.error).toMatch(/integrity/i);
    });
  }

  it('a tampered credential blob or encrypted secret is refused', async () => {
    const dir = await tempDirForTest();
    const { ek, akName } = await createEkAndAk('ecc', dir);
    const credential = makeCredential(ek, akName, Buffer.from('short secret'));
    const blob = Buffer.from(credential.credentialBlob);
    blob[blob.length - 1] = (blob[blob.length - 1] ?? 0) ^ 1;
    await writeFile(join(dir, 'cred.blob'), credentialFile({ ...credential, credentialBlob: blob }));
    expect((await activate(dir, 'cred.blob')).error).toMatch(/integrity/i);

    const point = Buffer.from(credential.encryptedSecret);
    point[5] = (point[5] ?? 0) ^ 1; // x changes: the point is off the curve or yields another seed
    await writeFile(join(dir, 'cred.point'), credentialFile({ ...credential, encryptedSecret: point }));
    expect((await activate(dir, 'cred.point')).secret).toBeUndefined();
  });

  for (const kind of ['rsa', 'ecc'] as const) {
    it(`${kind} EK: our credential and tpm2_makecredential's both activate for the same AK`, async () => {
      const dir = await tempDirForTest();
      const { ek, akName } = await createEkAndAk(kind, dir);
      const secret = Buffer.from('secret from the verifier');
      await writeFile(join(dir, 'secret.in'), secret);
      await runChecked(
        'tpm2_makecredential',
        ['-T', 'none', '-e', 'ek.pub', '-s', 'secret.in', '-n', akName.toString('hex'), '-o', 'cred.tools'],
        { timeoutMs: TOOL_TIMEOUT_MS, cwd: dir },
      );
      await writeFile(join(dir, 'cred.ours'), credentialFile(makeCredential(ek, akName, secret)));
      const tools = await readFile(join(dir, 'cred.tools'));
      const ours = await readFile(join(dir, 'cred.ours'));
      // Same layout and sizes; contents differ because the seeds are random.
      expect(ours.length).toBe(tools.length);
      expect(ours.subarray(0, 8)).toEqual(tools.subarray(0, 8));
      expect(await activate(dir, 'cred.tools')).toEqual({ secret });
      expect(await activate(dir, 'cred.ours')).toEqual({ secret });
    });
  }
});

describe('makeCredential input checks', () => {
  const akName = Buffer.concat([Buffer.from('000b', 'hex'), Buffer.alloc(32, 1)]);
  // A real modulus: random bytes would make OAEP fail whenever the top byte is small.
  const modulus = Buffer.from(
    generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ format: 'jwk' }).n ?? '',
    'base64url',
  );
  const rsaEk = { ...ekTemplate('rsa'), modulus } as TpmPublic;

  function reason(fn: () => unknown): { reason: string; message: string } {
    try {
      fn();
    } catch (err) {
      if (err instanceof AttestationError) return { reason: err.reason, message: err.message };
      throw err;
    }
    throw new Error('expected an AttestationError');
  }

  it('refuses EKs that are not restricted decryption keys with AES-128-CFB and SHA-256', () => {
    const notRestricted = { ...rsaEk, objectAttributes: rsaEk.objectAttributes & ~TPMA_OBJECT.restricted };
    expect(reason(() => makeCredential(notRestricted, akName, Buffer.alloc(16)))).toEqual({
      reason: 'ek-public',
      message: expect.stringContaining('lack restricted|decrypt') as string,
    });
    const sha384 = { ...rsaEk, nameAlg: TPM_ALG.SHA384 };
    expect(reason(() => makeCredential(sha384, akName, Buffer.alloc(16))).message).toContain(
      'nameAlg 0x000c, expected SHA-256',
    );
    const aes256 = { ...rsaEk, symmetric: { algorithm: TPM_ALG.AES, keyBits: 256, mode: TPM_ALG.CFB } };
    expect(reason(() => makeCredential(aes256, akName, Buffer.alloc(16))).message).toContain(
      '256 bits/mode 0x0043, expected AES-128-CFB',
    );
  });

  it('refuses an ECC EK whose point is not on the curve', () => {
    const ecc = { ...ekTemplate('ecc'), x: Buffer.alloc(32, 1), y: Buffer.alloc(32, 2) } as TpmPublic;
    expect(reason(() => makeCredential(ecc, akName, Buffer.alloc(16)))).toEqual({
      reason: 'ek-public',
      message: expect.stringContaining('P-256 point is not on the curve') as string,
    });
  });

  it('refuses AK names that are not SHA-256 names, and secrets outside 1..32 bytes', () => {
    expect(reason(() => makeCredential(rsaEk, akName.subarray(0, 33), Buffer.alloc(16)))).toEqual({
      reason: 'attestation-key',
      message: expect.stringContaining('got 33 bytes') as string,
    });
    const sha1Name = Buffer.concat([Buffer.from('0004', 'hex'), Buffer.alloc(32)]);
    expect(reason(() => makeCredential(rsaEk, sha1Name, Buffer.alloc(16))).message).toContain('starting with 0004');
    expect(() => makeCredential(rsaEk, akName, Buffer.alloc(0))).toThrow(RangeError);
    expect(() => makeCredential(rsaEk, akName, Buffer.alloc(33))).toThrow(/1 to 32 bytes, got 33/);
  });

  it('produces the sizes of the TPM structures', () => {
    const secret = Buffer.alloc(20, 9);
    const rsa = makeCredential(rsaEk, akName, secret);
    expect(rsa.encryptedSecret).toHaveLength(256);
    // TPM2B_DIGEST(HMAC-SHA-256) || AES-CFB(TPM2B_DIGEST(secret))
    expect(rsa.credentialBlob).toHaveLength(2 + 32 + 2 + secret.length);
    expect(rsa.credentialBlob.readUInt16BE(0)).toBe(32);
  });
});
