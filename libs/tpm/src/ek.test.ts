import { createHash, X509Certificate } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runChecked, startSwtpm, startUnixSwtpm, tempDirForTest, useTestEkCa } from '@constellation/testing';
import type { Swtpm, UnixSwtpm } from '@constellation/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EK_CERT_NV_INDEX } from './constants.js';
import { derSequence, readEkCertificate } from './ek.js';
import { TpmParseError } from './errors.js';
import { TpmReader } from './marshal.js';
import { publicKeyObject } from './public-area.js';
import { SocketTransport } from './socket-transport.js';
import { SwtpmControl } from './swtpm-control.js';
import { akTemplate, ekTemplate } from './templates.js';
import { Tpm } from './tpm.js';

const testCa = useTestEkCa();
let swtpm: Swtpm;
let tpm: Tpm;

beforeAll(async () => {
  swtpm = await startSwtpm({ manufacture: { ca: testCa(), vmid: 'ek-test' } });
  tpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port, timeoutMs: 10_000 }));
});

afterAll(async () => {
  await tpm.close();
  await swtpm.stop();
});

describe('EK certificates of a manufactured TPM', () => {
  it('reads the same RSA EK certificate bytes as tpm2_nvread, without the NV padding', async () => {
    const ours = await readEkCertificate(tpm, 'rsa');
    expect(ours).toBeDefined();
    const dir = await tempDirForTest();
    const out = join(dir, 'ek.nv');
    // One after the other: swtpm serves one connection, and our transport connects per command.
    await runChecked('tpm2_nvread', ['0x1c00002', '-o', out], { timeoutMs: 10_000, env: swtpm.toolEnv });
    const nv = await readFile(out);
    expect(nv.length).toBeGreaterThanOrEqual(ours!.length);
    expect(nv.subarray(0, ours!.length).toString('hex')).toBe(ours!.toString('hex'));
    // ... and exactly the certificate swtpm_setup wrote for the host's records.
    const file = await readFile(swtpm.manufactured!.ekRsaCertDerPath);
    expect(ours!.toString('hex')).toBe(file.toString('hex'));
    expect(new X509Certificate(ours!).subject).toBe('CN=ek-test');
  });

  it('finds the P-384 ECC certificate swtpm writes, and no P-256 one', async () => {
    expect(await readEkCertificate(tpm, 'ecc')).toBeUndefined();
    const p384 = await readEkCertificate(tpm, 'ecc-p384');
    expect(p384?.toString('hex')).toBe((await readFile(swtpm.manufactured!.ekEccCertDerPath)).toString('hex'));
    const pub = await tpm.nvReadPublic(EK_CERT_NV_INDEX['ecc-p384']);
    expect(pub.dataSize).toBeGreaterThanOrEqual(p384!.length);
  });

  it('regenerates the EK whose public key the certificate certifies (and manufactureTpm hashed)', async () => {
    const cert = new X509Certificate((await readEkCertificate(tpm, 'rsa'))!);
    const ek = await tpm.withEndorsementKey('rsa', (key) => Promise.resolve(key.public));
    if (ek.type !== 'rsa') throw new Error('expected an RSA EK');
    const certJwk = cert.publicKey.export({ format: 'jwk' });
    expect(Buffer.from(certJwk.n!, 'base64url').toString('hex')).toBe(ek.modulus.toString('hex'));
    const spki = publicKeyObject(ek).export({ type: 'spki', format: 'der' });
    expect(createHash('sha256').update(spki).digest('hex')).toBe(swtpm.manufactured!.ekPublicKeyHash);
  });

  it('cuts the DER certificate out of padded NV content and rejects what is not DER', () => {
    const der = Buffer.concat([Buffer.from([0x30, 0x82, 0x00, 0x03]), Buffer.from('abc')]);
    expect(derSequence(Buffer.concat([der, Buffer.alloc(20, 0xff)]), 'x')).toEqual(der);
    expect(derSequence(Buffer.from([0x30, 0x01, 0x05, 0x00]), 'x')).toEqual(Buffer.from([0x30, 0x01, 0x05]));
    expect(() => derSequence(Buffer.from([0x31, 0x01, 0x05]), 'x')).toThrow(TpmParseError);
    expect(() => derSequence(Buffer.from([0x30, 0x80, 0x05]), 'x')).toThrow(/unsupported DER length/);
    expect(() => derSequence(Buffer.from([0x30, 0x82, 0x01, 0x00, 0x05]), 'x')).toThrow(/only 1 present/);
    expect(() => derSequence(Buffer.alloc(0), 'x')).toThrow(TpmParseError);
  });
});

describe('over unix sockets', () => {
  let unix: UnixSwtpm;
  let unixTpm: Tpm;

  beforeAll(async () => {
    unix = await startUnixSwtpm({ manufacture: { ca: testCa(), vmid: 'unix-node' } });
    unixTpm = new Tpm(new SocketTransport({ path: unix.dataSocket, timeoutMs: 10_000, keepConnection: true }));
  });

  afterAll(async () => {
    await unixTpm.close();
    await unix.stop();
  });

  it('describes the socket and resets the TPM through the unix control channel', async () => {
    expect(unixTpm.transport.description).toBe(`swtpm at unix socket ${unix.dataSocket}`);
    await unixTpm.pcrEvent(15, Buffer.from('cluster-id'));
    expect((await unixTpm.pcrRead('sha256', [15])).get(15)).not.toEqual(Buffer.alloc(32));
    await new SwtpmControl({ path: unix.ctrlSocket }).reset();
    await unixTpm.startup();
    expect((await unixTpm.pcrRead('sha256', [15])).get(15)).toEqual(Buffer.alloc(32));
  });

  it('activates a credential for its certified EK (timed)', async () => {
    const dir = await tempDirForTest();
    const cert = (await readEkCertificate(unixTpm, 'rsa'))!;
    const pem = join(dir, 'ek.pem');
    await writeFile(pem, new X509Certificate(cert).publicKey.export({ type: 'spki', format: 'pem' }));
    await writeFile(join(dir, 'secret.bin'), Buffer.alloc(32, 0x5a));
    const akName = await unixTpm.withPrimaryKey('endorsement', akTemplate('ecc'), (ak) => Promise.resolve(ak.name));
    // The verifier's side uses only the certificate's key (PEM), as a real verifier would.
    await runChecked(
      'tpm2_makecredential',
      [
        '-T',
        'none',
        '-G',
        'rsa',
        '-u',
        pem,
        '-s',
        join(dir, 'secret.bin'),
        '-n',
        akName.toString('hex'),
        '-o',
        join(dir, 'cred'),
      ],
      { timeoutMs: 10_000 },
    );
    const r = new TpmReader(await readFile(join(dir, 'cred')), 'credential');
    r.u32('magic');
    r.u32('version');
    const blob = r.sized('blob');
    const secret = r.sized('secret');
    const times: number[] = [];
    for (let i = 0; i < 5; i++) {
      const started = performance.now();
      const out = await unixTpm.activateCredentialWithKeys(akTemplate('ecc'), 'rsa', blob, secret);
      times.push(performance.now() - started);
      expect(out).toEqual(Buffer.alloc(32, 0x5a));
    }
    times.sort((a, b) => a - b);
    // The activation alone (session, PolicySecret, ActivateCredential, flush) with both keys loaded.
    const bare = await unixTpm.withPrimaryKeys(
      [
        { hierarchy: 'endorsement', template: akTemplate('ecc') },
        { hierarchy: 'endorsement', template: ekTemplate('rsa') },
      ],
      async ([ak, ek]) => {
        const started = performance.now();
        expect(await unixTpm.activateCredential(ak!.handle, ek!.handle, blob, secret)).toEqual(Buffer.alloc(32, 0x5a));
        return performance.now() - started;
      },
    );
    console.info(
      `over a unix socket: activateCredentialWithKeys median ${times[2]!.toFixed(1)} ms (of 5), ` +
        `activateCredential alone ${bare.toFixed(1)} ms`,
    );
  });
});
