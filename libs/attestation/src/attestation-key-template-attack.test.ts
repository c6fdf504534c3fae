import { generateKeyPairSync } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { startSwtpm, useTestEkCa } from '@constellation/testing';
import type { Swtpm } from '@constellation/testing';
import { SocketTransport, TPMA_OBJECT, TPM_ALG, Tpm, akTemplate, marshalPublic } from '@constellation/tpm';
import type { EccPublic, RsaPublic, TpmPublic } from '@constellation/tpm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkAttestationKey } from './attestation-key.js';
import { EkIdentityVerifier } from './ek-identity.js';
import { AttestationError } from './errors.js';
import { pemCertificatesToDer } from './pem.js';
import { TpmIssuer } from './tpm-issuer.js';

/*
 * Attack (issue 42, item 2): a software attestation key, with the public area of a TPM key that
 * claims fixedTPM, but administered by policy (adminWithPolicy and an authPolicy of the attacker's
 * choice). checkAttestationKey accepted it and a credential was made for it; only the TPM's own
 * refusal to load such a key for ActivateCredential (TPM_RC_AUTH_UNAVAILABLE) stopped the attack.
 * The AK's public area must now be our AK template exactly, apart from the key itself.
 */

/** TPM_ALG_KDF1_SP800_56A: the ECDH KDF a key-exchange key could name. */
const KDF1_SP800_56A = 0x0020;

const ca = useTestEkCa();
let swtpm: Swtpm;
let tpm: Tpm;
let issuer: TpmIssuer;
let verifier: EkIdentityVerifier;

beforeAll(async () => {
  swtpm = await startSwtpm({ manufacture: { ca: ca(), vmid: 'ak-template-victim' } });
  tpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port, keepConnection: true }));
  issuer = await TpmIssuer.rooted(tpm, {
    ekIntermediates: pemCertificatesToDer(await readFile(ca().intermediateCertPath, 'utf8')),
  });
  verifier = new EkIdentityVerifier({ roots: pemCertificatesToDer(await readFile(ca().rootCertPath, 'utf8')) });
}, 60_000);

afterAll(async () => {
  await tpm.close();
  await swtpm.stop();
});

/** A P-256 key the attacker holds in software, in the shape of our AK template. */
function softwareAk(): EccPublic {
  const jwk = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'jwk' });
  return {
    ...(akTemplate('ecc') as EccPublic),
    x: Buffer.from(jwk.x ?? '', 'base64url'),
    y: Buffer.from(jwk.y ?? '', 'base64url'),
  };
}

function refusal(ak: TpmPublic): AttestationError {
  let caught: unknown;
  try {
    checkAttestationKey(marshalPublic(ak));
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(AttestationError);
  return caught as AttestationError;
}

const policyAdministered = (): EccPublic => ({
  ...softwareAk(),
  objectAttributes: akTemplate('ecc').objectAttributes | TPMA_OBJECT.adminWithPolicy,
  authPolicy: Buffer.alloc(32, 0xab),
});

describe('an attestation key that is not exactly our AK template', () => {
  it('refuses a policy-administered key claiming fixedTPM, naming adminWithPolicy and the authPolicy', () => {
    const err = refusal(policyAdministered());
    expect(err.reason).toBe('attestation-key');
    expect(err.message).toContain('adminWithPolicy');
    expect(err.message).toContain('authPolicy of 32 bytes');
    // Either alone is refused too.
    expect(refusal({ ...softwareAk(), authPolicy: Buffer.alloc(32, 1) }).message).toMatch(
      /attestation key has an authPolicy of 32 bytes; the AK template's is empty/,
    );
    expect(
      refusal({ ...softwareAk(), objectAttributes: akTemplate('ecc').objectAttributes | TPMA_OBJECT.adminWithPolicy })
        .message,
    ).toMatch(/attributes differ from the AK template: adminWithPolicy set/);
  });

  it('makes no credential for it, even beside a genuine EK certificate', async () => {
    const rooted = issuer.rooted;
    if (rooted === undefined) throw new Error('issuer is not rooted');
    const err = await verifier.challenge(rooted.identity, marshalPublic(policyAdministered())).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(AttestationError);
    expect((err as AttestationError).message).toMatch(/adminWithPolicy/);
  });

  it('refuses every other difference from the template, naming it', () => {
    const ecc = akTemplate('ecc').objectAttributes;
    expect(refusal({ ...softwareAk(), objectAttributes: ecc | TPMA_OBJECT.stClear }).message).toMatch(
      /attributes differ from the AK template: stClear set/,
    );
    expect(refusal({ ...softwareAk(), objectAttributes: ecc & ~TPMA_OBJECT.noDA }).message).toMatch(
      /attributes differ from the AK template: noDA missing/,
    );
    expect(
      refusal({ ...softwareAk(), symmetric: { algorithm: TPM_ALG.AES, keyBits: 128, mode: TPM_ALG.CFB } }).message,
    ).toMatch(/symmetric algorithm differs from the AK template's/);
    expect(refusal({ ...softwareAk(), kdf: { scheme: KDF1_SP800_56A, hash: TPM_ALG.SHA256 } }).message).toMatch(
      /KDF differs from the AK template's/,
    );
    const rsa = (change: Partial<RsaPublic>): RsaPublic => ({
      ...(akTemplate('rsa') as RsaPublic),
      modulus: Buffer.alloc(256, 0xc3),
      ...change,
    });
    expect(refusal(rsa({ scheme: { scheme: TPM_ALG.RSAPSS, hash: TPM_ALG.SHA256 } })).message).toMatch(
      /signing scheme differs from the AK template's/,
    );
    expect(refusal(rsa({ keyBits: 3072, modulus: Buffer.alloc(384, 0xc3) })).message).toMatch(
      /3072-bit RSA key; the AK template's is 2048/,
    );
    expect(refusal(rsa({ exponent: 3 })).message).toMatch(/exponent differs from the AK template's/);
  });

  it('accepts the keys a real TPM makes from our template', async () => {
    for (const algorithm of ['ecc', 'rsa'] as const) {
      const publicBytes = await tpm.withPrimaryKey('endorsement', akTemplate(algorithm), (ak) =>
        Promise.resolve(ak.publicBytes),
      );
      expect(checkAttestationKey(publicBytes).type).toBe(algorithm);
    }
  });
});
