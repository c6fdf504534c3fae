import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runChecked, startSwtpm, tempDirForTest } from '@constellation/testing';
import type { Swtpm } from '@constellation/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { marshalCommand, parseResponse } from './command.js';
import type { CommandSpec } from './command.js';
import { TPM_CC, TPM_RS_PW } from './constants.js';
import { TpmError } from './errors.js';
import { TpmReader } from './marshal.js';
import { SocketTransport } from './socket-transport.js';
import { akTemplate, ekTemplate } from './templates.js';
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

interface Credential {
  credentialBlob: Buffer;
  encryptedSecret: Buffer;
}

/** tpm2-tools' credential file: magic 0xBADCC0DE, version 1, TPM2B_ID_OBJECT, TPM2B_ENCRYPTED_SECRET. */
function parseToolCredential(file: Buffer): Credential {
  const r = new TpmReader(file, 'tpm2-tools credential');
  expect(r.u32('magic')).toBe(0xbadcc0de);
  expect(r.u32('version')).toBe(1);
  const credentialBlob = r.sized('credentialBlob');
  const encryptedSecret = r.sized('secret');
  r.end();
  return { credentialBlob, encryptedSecret };
}

/** The EK public area as tpm2-tools writes it (TPM2B_PUBLIC), and the transient EK it leaves behind flushed. */
async function toolEkPublic(dir: string, algorithm: 'rsa' | 'ecc'): Promise<string> {
  const pub = join(dir, `ek-${algorithm}.pub`);
  await runChecked('tpm2_createek', ['-c', join(dir, 'ek.ctx'), '-G', algorithm, '-u', pub], {
    timeoutMs: 20_000,
    env: swtpm.toolEnv,
  });
  // swtpm has no resource manager: the tool's EK stays loaded until flushed.
  await runChecked('tpm2_flushcontext', ['-t'], { timeoutMs: 10_000, env: swtpm.toolEnv });
  return pub;
}

async function makeCredential(dir: string, ekPub: string, akName: Buffer, secret: Buffer): Promise<Credential> {
  await writeFile(join(dir, 'secret.bin'), secret);
  const out = join(dir, 'cred.out');
  await runChecked(
    'tpm2_makecredential',
    ['-T', 'none', '-e', ekPub, '-s', join(dir, 'secret.bin'), '-n', akName.toString('hex'), '-o', out],
    { timeoutMs: 10_000 },
  );
  return parseToolCredential(await readFile(out));
}

const akName = (): Promise<Buffer> =>
  tpm.withPrimaryKey('endorsement', akTemplate('ecc'), (ak) => Promise.resolve(ak.name));

describe('credential activation against tpm2_makecredential', () => {
  it('creates the same EK public areas as tpm2_createek (RSA and ECC)', async () => {
    const dir = await tempDirForTest();
    for (const algorithm of ['rsa', 'ecc'] as const) {
      const tool = await readFile(await toolEkPublic(dir, algorithm));
      // tpm2-tools writes a TPM2B_PUBLIC: strip the 2-byte size.
      expect(tool.readUInt16BE(0)).toBe(tool.length - 2);
      const ours = await tpm.withEndorsementKey(algorithm, (ek) => Promise.resolve(ek.publicBytes));
      expect(ours.toString('hex')).toBe(tool.subarray(2).toString('hex'));
    }
  });

  for (const ekAlgorithm of ['rsa', 'ecc'] as const) {
    it(`activates a credential made for the ${ekAlgorithm} EK and our ECC AK`, async () => {
      const dir = await tempDirForTest();
      const secret = Buffer.from('0123456789abcdef0123456789abcdef', 'utf8');
      const credential = await makeCredential(dir, await toolEkPublic(dir, ekAlgorithm), await akName(), secret);
      const started = performance.now();
      const recovered = await tpm.activateCredentialWithKeys(
        akTemplate('ecc'),
        ekAlgorithm,
        credential.credentialBlob,
        credential.encryptedSecret,
      );
      const ms = performance.now() - started;
      expect(recovered.toString('hex')).toBe(secret.toString('hex'));
      console.info(`ActivateCredential (${ekAlgorithm} EK, with both primaries, TCP): ${ms.toFixed(0)} ms`);
      // Everything was flushed: no transient objects or sessions left behind.
      const handles = await runChecked('tpm2_getcap', ['handles-transient'], { timeoutMs: 10_000, env: swtpm.toolEnv });
      expect(handles.stdout.toString().trim()).toBe('');
      const sessions = await runChecked('tpm2_getcap', ['handles-loaded-session'], {
        timeoutMs: 10_000,
        env: swtpm.toolEnv,
      });
      expect(sessions.stdout.toString().trim()).toBe('');
    });
  }

  it('fails with a typed error naming ActivateCredential when the AK name is wrong, and flushes everything', async () => {
    const dir = await tempDirForTest();
    const wrongName = Buffer.from(await akName());
    wrongName[wrongName.length - 1]! ^= 0x01;
    const credential = await makeCredential(dir, await toolEkPublic(dir, 'rsa'), wrongName, Buffer.alloc(16, 7));
    const err = await tpm
      .activateCredentialWithKeys(akTemplate('ecc'), 'rsa', credential.credentialBlob, credential.encryptedSecret)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TpmError);
    expect((err as TpmError).command).toBe('ActivateCredential');
    expect((err as TpmError).message).toMatch(/^TPM2_ActivateCredential failed: TPM_RC_INTEGRITY/);
    // A failed activation leaves no session or object behind: the TPM still has room for three objects.
    const names = await tpm.withPrimaryKeys(
      [
        { hierarchy: 'endorsement', template: akTemplate('ecc') },
        { hierarchy: 'endorsement', template: akTemplate('rsa') },
        { hierarchy: 'owner', template: akTemplate('ecc') },
      ],
      (keys) => Promise.resolve(keys.map((k) => k.name.toString('hex'))),
    );
    expect(new Set(names).size).toBe(3);
  });

  it('refuses an EK policy session that was never satisfied', async () => {
    // Without PolicySecret the EK's policy fails: proof that the policy session is what authorises the EK.
    const session = await tpm.startAuthSession();
    try {
      const err = await tpm
        .withPrimaryKeys(
          [
            { hierarchy: 'endorsement', template: akTemplate('ecc') },
            { hierarchy: 'endorsement', template: ekTemplate('rsa') },
          ],
          async ([ak, ek]) => {
            const spec: CommandSpec = {
              name: 'ActivateCredential',
              code: TPM_CC.ActivateCredential,
              handles: [ak!.handle, ek!.handle],
              authSessions: [TPM_RS_PW, session.handle],
              parameters: Buffer.from('00000000', 'hex'),
            };
            return parseResponse(spec, await tpm.transport.send(marshalCommand(spec)));
          },
        )
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TpmError);
      expect((err as TpmError).rcName).toBe('TPM_RC_POLICY_FAIL');
    } finally {
      await tpm.flushContext(session.handle);
    }
  });
});
