import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { startSwtpm, useTestEkCa } from '@constellation/testing';
import type { Swtpm } from '@constellation/testing';
import { SocketTransport, Tpm } from '@constellation/tpm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pemCertificatesToDer } from './pem.js';
import { EkIdentityVerifier } from './ek-identity.js';
import { componentDigest, expectedMeasurements } from './measured-boot.js';
import { SoftwareAttester } from './testing/software-attester.js';
import { TpmIssuer } from './tpm-issuer.js';
import { TpmValidator } from './tpm-validator.js';

// Attacker 1: network access, no TPM, and the cluster's public measurements.
const measurements = expectedMeasurements(
  [{ pcr: 9, description: 'bootstrapper bundle', digest: componentDigest('bootstrapper v1') }],
  [9, 15],
);
const ca = useTestEkCa();
let swtpm: Swtpm;
let tpm: Tpm;
let genuine: TpmIssuer;

beforeAll(async () => {
  swtpm = await startSwtpm({ manufacture: { ca: ca(), vmid: 'genuine' } });
  tpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port }));
  genuine = await TpmIssuer.rooted(tpm);
});

afterAll(async () => {
  await tpm.close();
  await swtpm.stop();
});

describe('a software attester (own key, the right PCR values, no TPM)', () => {
  it('passes the unrooted qemu-vtpm checks: PCR values alone prove nothing, hence the warning on every use', async () => {
    const warnings: string[] = [];
    const nonce = randomBytes(32);
    const document = await new SoftwareAttester({ claims: measurements }).issue(Buffer.from('key'), nonce);
    const result = new TpmValidator({ variant: 'qemu-vtpm', measurements, warn: (w) => warnings.push(w) }).validate(
      document,
      nonce,
      Buffer.from('key'),
    );
    expect(result.pcrs.get(9)).toEqual(measurements.get(9)?.expected);
    expect(warnings).toEqual([
      'attestation variant "qemu-vtpm" trusts any attestation key: anyone who knows the expected PCR values can pass it without a TPM; use "tpm2-ek" wherever the TPM has an EK certificate',
    ]);
  });

  it('is refused by tpm2-ek: no EK certificate at all', async () => {
    const nonce = randomBytes(32);
    const document = await new SoftwareAttester({ claims: measurements }).issue(Buffer.alloc(0), nonce);
    expect(() => new TpmValidator({ measurements }).validate(document, nonce)).toThrow(
      'attestation variant is "qemu-vtpm", expected "tpm2-ek"',
    );
  });

  it('is refused by tpm2-ek with a copied genuine EK certificate: it cannot activate the credential', async () => {
    const attacker = new SoftwareAttester({ claims: measurements, stolenIdentity: genuine.rooted?.identity });
    const nonce = randomBytes(32);
    const document = await attacker.issue(Buffer.alloc(0), nonce);
    // The quote checks pass: the forgery is perfect as far as PCRs go...
    const result = new TpmValidator({ measurements }).validate(document, nonce);
    const roots = pemCertificatesToDer(await readFile(ca().rootCertPath, 'utf8'));
    const intermediates = pemCertificatesToDer(await readFile(ca().intermediateCertPath, 'utf8'));
    // ...and the certificate path too, since the certificate is genuine...
    const pending = await new EkIdentityVerifier({ roots, intermediates }).challenge(
      result.identityClaim,
      result.akPublic,
    );
    // ...but only the TPM holding that EK can open the credential, and it refuses a foreign AK.
    const secret = await attacker.rooted?.activate(pending.credential);
    expect(() => pending.prove(secret ?? Buffer.alloc(0), nonce, 'join')).toThrow(
      'credential activation failed: the attestation key does not live in the TPM that holds the certified endorsement key',
    );
    await expect(genuine.rooted?.activate(pending.credential)).rejects.toThrow(/ActivateCredential/);
  });
});
