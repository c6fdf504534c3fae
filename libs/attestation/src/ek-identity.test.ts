import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createEkCa } from '@constellation/swtpm';
import { createTempDir, startSwtpm, useTestEkCa } from '@constellation/testing';
import type { Swtpm, TempDir } from '@constellation/testing';
import { SocketTransport, Tpm, TpmError } from '@constellation/tpm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activationProof } from './activation-proof.js';
import { decodeDocument, encodeDocument } from './document.js';
import { pemCertificatesToDer } from './pem.js';
import { EkIdentityVerifier } from './ek-identity.js';
import { AttestationError } from './errors.js';
import { TpmIssuer } from './tpm-issuer.js';
import { TpmValidator } from './tpm-validator.js';

const ca = useTestEkCa();
let scratch: TempDir;

interface Machine {
  swtpm: Swtpm;
  tpm: Tpm;
  issuer: TpmIssuer;
  ekPublicKeyHash: string;
}

let a: Machine;
let b: Machine;
let foreign: Machine;
let verifier: EkIdentityVerifier;
let roots: Buffer[];
let intermediates: Buffer[];

async function machine(name: string, from: Parameters<typeof startSwtpm>[0] & object): Promise<Machine> {
  const swtpm = await startSwtpm(from);
  const tpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port, keepConnection: true }));
  const chain =
    from.manufacture === undefined
      ? []
      : pemCertificatesToDer(await readFile(from.manufacture.ca.intermediateCertPath, 'utf8'));
  const issuer = await TpmIssuer.rooted(tpm, { ekIntermediates: chain });
  const hash = swtpm.manufactured?.ekPublicKeyHash;
  if (hash === undefined) throw new Error(`${name} was not manufactured`);
  return { swtpm, tpm, issuer, ekPublicKeyHash: hash };
}

beforeAll(async () => {
  // Another vendor: a CA the verifier does not pin.
  scratch = await createTempDir('constellation-ek-identity-');
  const otherCa = await createEkCa(join(scratch.path, 'other-ca'), {
    name: 'Other vendor',
  });
  [a, b, foreign] = await Promise.all([
    machine('a', { manufacture: { ca: ca(), vmid: 'machine-a' } }),
    machine('b', { manufacture: { ca: ca(), vmid: 'machine-b' } }),
    machine('foreign', { manufacture: { ca: otherCa, vmid: 'machine-foreign' } }),
  ]);
  roots = pemCertificatesToDer(await readFile(ca().rootCertPath, 'utf8'));
  intermediates = pemCertificatesToDer(await readFile(ca().intermediateCertPath, 'utf8'));
  verifier = new EkIdentityVerifier({ roots });
}, 60_000);

afterAll(async () => {
  const started: (Machine | undefined)[] = [a, b, foreign];
  for (const m of started) {
    await m?.tpm.close();
    await m?.swtpm.stop();
  }
  await (scratch as TempDir | undefined)?.remove();
});

function rooted(m: Machine): NonNullable<TpmIssuer['rooted']> {
  const identity = m.issuer.rooted;
  if (identity === undefined) throw new Error('issuer is not rooted');
  return identity;
}

async function refusal(promise: Promise<unknown>): Promise<AttestationError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AttestationError);
  return err as AttestationError;
}

describe('EK-rooted identity with real swtpm TPMs manufactured with EK certificates', () => {
  it('proves a genuine TPM: certificate path to the pinned root, then credential activation', async () => {
    const nonce = randomBytes(32);
    const document = await a.issuer.issue(Buffer.from('user data'), nonce);
    const result = new TpmValidator({ measurements: new Map() }).validate(document, nonce);
    expect(result.variant.name).toBe('tpm2-ek');
    const pending = await verifier.challenge(result.identityClaim, result.akPublic);
    const secret = await rooted(a).activate(pending.credential);
    const identity = pending.prove(activationProof('join', secret, nonce, rooted(a).akName), nonce, 'join');
    expect(identity.ekPublicKeyHash).toBe(a.ekPublicKeyHash);
    expect(identity.akName).toBe(result.attestationKeyName);
    expect(identity.certificatePath).toHaveLength(3);
  });

  it('refuses a tpm2-ek document that carries no EK certificate', async () => {
    const nonce = randomBytes(32);
    const unrooted = decodeDocument(await new TpmIssuer(a.tpm).issue(Buffer.alloc(0), nonce));
    let err: unknown;
    try {
      new TpmValidator({ measurements: new Map() }).validate(
        encodeDocument({ ...unrooted, variant: 'tpm2-ek' }),
        nonce,
      );
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({
      reason: 'ek-certificate',
      message: 'a "tpm2-ek" document must carry the TPM\'s EK certificate; this one carries none',
    });
  });

  // A software attester with a copied genuine EK certificate: software-attester.test.ts.

  it('refuses the AK of TPM A presented with the EK certificate of TPM B (activation fails on both TPMs)', async () => {
    const pending = await verifier.challenge(rooted(b).identity, rooted(a).akPublic);
    for (const m of [a, b]) {
      const err = await rooted(m)
        .activate(pending.credential)
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(err).toBeInstanceOf(TpmError);
    }
    const err = await refusal(Promise.resolve().then(() => pending.prove(Buffer.alloc(0), randomBytes(32), 'join')));
    expect(err.reason).toBe('activation');
    expect(err.message).toMatch(/^no credential activation proof/);
  });

  it('refuses an EK certificate from a CA that is not pinned', async () => {
    const err = await refusal(verifier.challenge(rooted(foreign).identity, rooted(foreign).akPublic));
    expect(err.reason).toBe('ek-certificate');
    expect(err.message).toMatch(/does not chain to a pinned root/);
  });

  it('refuses an expired EK certificate', async () => {
    const later = new EkIdentityVerifier({ roots, now: () => new Date('2199-01-01T00:00:00Z') });
    const err = await refusal(later.challenge(rooted(a).identity, rooted(a).akPublic));
    expect(err.reason).toBe('ek-certificate');
    expect(err.message).toMatch(/expired/);
  });

  it("refuses an EK certificate whose key is not the TPM's EK", async () => {
    const mixed = { ...rooted(a).identity, ekPublic: rooted(b).identity.ekPublic };
    const err = await refusal(verifier.challenge(mixed, rooted(a).akPublic));
    expect(err.reason).toBe('ek-public');
  });

  it('uses intermediates the verifier knows when the node sends none', async () => {
    const bare = { ...rooted(a).identity, ekIntermediates: [] };
    await expect(verifier.challenge(bare, rooted(a).akPublic)).rejects.toMatchObject({ reason: 'ek-certificate' });
    const knowing = new EkIdentityVerifier({ roots, intermediates });
    const pending = await knowing.challenge(bare, rooted(a).akPublic);
    const nonce = randomBytes(32);
    const secret = await rooted(a).activate(pending.credential);
    expect(pending.prove(activationProof('join', secret, nonce, rooted(a).akName), nonce, 'join').ekPublicKeyHash).toBe(
      a.ekPublicKeyHash,
    );
  });
});
