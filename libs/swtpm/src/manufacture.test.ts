import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEkCa, openEkCa } from './ek-ca.js';
import type { EkCa } from './ek-ca.js';
import { manufactureTpm, spkiSha256 } from './manufacture.js';
import type { ManufacturedTpm } from './manufacture.js';
import { startSwtpmProcess } from './process.js';
import { runProgram, SwtpmToolError } from './programs.js';
import { errorMessage } from '@constellation/errors';

// This package sits below @constellation/testing and @constellation/tpm (the test harness is
// built on it), so its tests use node:fs and tpm2-tools directly. The cross-check against our
// own TPM client's EK is in libs/tpm (ek.test.ts).
let root: string;
let ca: EkCa;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'constellation-swtpm-test-'));
  const started = performance.now();
  ca = await createEkCa(join(root, 'ca'));
  console.info(`createEkCa: ${(performance.now() - started).toFixed(0)} ms`);
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

const mode = async (path: string): Promise<number> => (await stat(path)).mode & 0o777;

describe('EK CA', () => {
  it('is a private directory with a root and an intermediate CA', async () => {
    expect(await mode(ca.dir)).toBe(0o700);
    expect(await mode(ca.rootKeyPath)).toBe(0o600);
    expect(await mode(ca.intermediateKeyPath)).toBe(0o600);
    const rootCert = new X509Certificate(await readFile(ca.rootCertPath));
    const intermediate = new X509Certificate(await readFile(ca.intermediateCertPath));
    expect(rootCert.ca).toBe(true);
    expect(rootCert.verify(rootCert.publicKey)).toBe(true);
    expect(intermediate.ca).toBe(true);
    expect(intermediate.verify(rootCert.publicKey)).toBe(true);
    expect(intermediate.issuer).toBe(rootCert.subject);
    await expect(createEkCa(ca.dir)).rejects.toThrow(/is not empty/);
  });

  it('is ECDSA P-384 by default and RSA-2048 with SHA-256 when asked, and openEkCa tells which', async () => {
    const intermediate = new X509Certificate(await readFile(ca.intermediateCertPath));
    expect(intermediate.publicKey.asymmetricKeyDetails?.namedCurve).toBe('secp384r1');
    expect((await openEkCa(ca.dir)).keyAlgorithm).toBe('ecdsa-p384');

    const rsa = await createEkCa(join(root, 'rsa-ca'), { keyAlgorithm: 'rsa-2048' });
    expect(rsa.keyAlgorithm).toBe('rsa-2048');
    const rsaRoot = new X509Certificate(await readFile(rsa.rootCertPath));
    const rsaIntermediate = new X509Certificate(await readFile(rsa.intermediateCertPath));
    expect(rsaIntermediate.publicKey.asymmetricKeyDetails?.modulusLength).toBe(2048);
    expect(rsaIntermediate.verify(rsaRoot.publicKey)).toBe(true);
    // sha256WithRSAEncryption, as vendors' RSA EK CAs sign (openssl prints the algorithm's name).
    const text = await runProgram('openssl', ['x509', '-in', rsa.intermediateCertPath, '-noout', '-text'], {
      timeoutMs: 10_000,
    });
    expect(text.stdout).toMatch(/Signature Algorithm: sha256WithRSAEncryption/);
    expect((await openEkCa(rsa.dir)).keyAlgorithm).toBe('rsa-2048');
  });
});

describe('manufactureTpm', () => {
  let tpms: ManufacturedTpm[];

  beforeAll(async () => {
    // Three at once against one CA: swtpm_localca serialises on its lock in the CA directory.
    const started = performance.now();
    tpms = await Promise.all(
      ['node-0', 'node-1', 'node-2'].map((vmid) =>
        manufactureTpm({ stateDir: join(root, vmid, 'tpm'), vmid, ca, timeoutMs: 50_000 }),
      ),
    );
    console.info(`manufactureTpm x3 in parallel: ${(performance.now() - started).toFixed(0)} ms`);
  }, 60_000);

  it('gives each TPM an RSA EK certificate that chains to the root through the intermediate', async () => {
    const serials = new Set<string>();
    for (const [i, tpm] of tpms.entries()) {
      const der = await readFile(tpm.ekRsaCertDerPath);
      const cert = new X509Certificate(der);
      expect(cert.subject).toBe(`CN=node-${i}`);
      serials.add(cert.serialNumber);
      const pem = join(root, `ek-${i}.pem`);
      await runProgram('openssl', ['x509', '-inform', 'der', '-in', tpm.ekRsaCertDerPath, '-out', pem], {
        timeoutMs: 10_000,
      });
      const verified = await runProgram(
        'openssl',
        ['verify', '-CAfile', ca.rootCertPath, '-untrusted', ca.intermediateCertPath, pem],
        { timeoutMs: 10_000 },
      );
      expect(verified.stdout.trim()).toBe(`${pem}: OK`);
      // Without the intermediate the chain does not reach the root.
      await expect(
        runProgram('openssl', ['verify', '-CAfile', ca.rootCertPath, pem], { timeoutMs: 10_000 }),
      ).rejects.toThrow(/unable to get local issuer certificate/);
      // The ECC certificate exists too (P-384, as swtpm_setup makes it).
      const ecc = new X509Certificate(await readFile(tpm.ekEccCertDerPath));
      expect(ecc.publicKey.asymmetricKeyDetails?.namedCurve).toBe('secp384r1');
    }
    expect(serials.size).toBe(3);
    expect(new Set(tpms.map((t) => t.ekPublicKeyHash)).size).toBe(3);
  });

  it('reports the hash of the EK that the running TPM regenerates (tpm2_createek)', async () => {
    const tpm = tpms[0]!;
    const swtpm = await startSwtpmProcess({ stateDir: tpm.stateDir, dataSocket: join(root, 'node-0', 'swtpm.sock') });
    try {
      const env = { ...process.env, TPM2TOOLS_TCTI: swtpm.tcti };
      const pem = join(root, 'node-0', 'ek.pem');
      await runProgram('tpm2_createek', ['-c', join(root, 'node-0', 'ek.ctx'), '-G', 'rsa', '-f', 'pem', '-u', pem], {
        timeoutMs: 20_000,
        env,
      });
      const { createPublicKey, createHash } = await import('node:crypto');
      const spki = createPublicKey(await readFile(pem)).export({ type: 'spki', format: 'der' });
      expect(createHash('sha256').update(spki).digest('hex')).toBe(tpm.ekPublicKeyHash);
      expect(tpm.ekPublicKeyHash).toBe(spkiSha256(new X509Certificate(await readFile(tpm.ekRsaCertDerPath))));
      expect(tpm.ekPublicKeyHash).toMatch(/^[0-9a-f]{64}$/);
    } finally {
      await swtpm.stop();
    }
  });

  it('names swtpm_setup and its output when manufacturing fails', async () => {
    const broken = { ...ca, localcaConfigPath: join(root, 'missing.conf') };
    const err = await manufactureTpm({ stateDir: join(root, 'broken'), vmid: 'broken', ca: broken }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(SwtpmToolError);
    expect((err as SwtpmToolError).program).toBe('swtpm_setup');
    expect(errorMessage(err)).toMatch(/^swtpm_setup exited with 1: /);
    expect(errorMessage(err)).toMatch(/swtpm_localca|missing\.conf/);
  });
});
