// Bench and test fixture: a TPM identity held in software, for load runs with hundreds of nodes
// where an swtpm process per node would dominate. Each identity is what a manufactured TPM has:
// its own RSA-2048 endorsement key with a certificate from the cluster's EK CA, and an attestation
// key. Every join still does the real work on both sides: the service validates the EK path,
// makes a credential that only the EK's private key opens, and checks quotes signed by the AK.
// What is simulated is only where those keys live: in this process, not in a TPM.
import {
  constants,
  createDecipheriv,
  createHmac,
  generateKeyPair,
  privateDecrypt,
  publicEncrypt,
  timingSafeEqual,
} from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { execFile } from 'node:child_process';
import { ekPublicKeyHash, kdfa, pemCertificatesToDer } from '@constellation/attestation';
import type { Issuer, Measurements, RootedIdentity } from '@constellation/attestation';
import { SoftwareAttester } from '@constellation/attestation/testing';
import type { Credential, TpmIdentity } from '@constellation/proto';
import { ekCaDigestOption } from '@constellation/swtpm';
import type { EkCa } from '@constellation/swtpm';
import { TpmReader, ekTemplate, marshalPublic } from '@constellation/tpm';
import type { RsaPublic } from '@constellation/tpm';

const run = promisify(execFile);
const OAEP_IDENTITY_LABEL = Buffer.from('IDENTITY\0', 'latin1');

/** What one software TPM keeps: the EK's private key and its certificate chain. */
export interface SoftwareTpmIdentity {
  name: string;
  ekPrivateKeyPem: string;
  /** DER EK certificate issued by the EK CA's intermediate. */
  ekCertificate: Buffer;
  ekIntermediates: Buffer[];
  /** SHA-256 of the EK certificate's SubjectPublicKeyInfo: the instance registry's key. */
  ekPublicKeyHash: string;
}

function ekPublicArea(privateKey: KeyObject): Buffer {
  const jwk = createPublicKey(privateKey).export({ format: 'jwk' });
  const template = ekTemplate('rsa') as RsaPublic;
  return marshalPublic({ ...template, modulus: Buffer.from(jwk.n ?? '', 'base64url') });
}

/**
 * TPM2_ActivateCredential (TPM 2.0 Part 1 §24) done with the EK's private key: recover the seed,
 * check the integrity HMAC over the AK name (so a credential made for another AK is refused, as a
 * TPM refuses it), then decrypt the secret.
 */
export function activateInSoftware(ekPrivateKey: KeyObject, akName: Buffer, credential: Credential): Buffer {
  const seed = privateDecrypt(
    {
      key: ekPrivateKey,
      padding: constants.RSA_PKCS1_OAEP_PADDING,
      oaepHash: 'sha256',
      oaepLabel: OAEP_IDENTITY_LABEL,
    },
    credential.encryptedSecret,
  );
  const blob = new TpmReader(credential.credentialBlob, 'credential blob');
  const integrity = blob.sized('integrity HMAC');
  const encIdentity = blob.bytes(blob.remaining, 'encrypted identity');
  const hmacKey = kdfa('sha256', seed, 'INTEGRITY', Buffer.alloc(0), Buffer.alloc(0), 256);
  const expected = createHmac('sha256', hmacKey).update(encIdentity).update(akName).digest();
  if (integrity.length !== expected.length || !timingSafeEqual(integrity, expected))
    throw new Error('ActivateCredential: integrity check failed (credential made for another key)');
  const symKey = kdfa('sha256', seed, 'STORAGE', akName, Buffer.alloc(0), 128);
  const decipher = createDecipheriv('aes-128-cfb', symKey, Buffer.alloc(16));
  const plain = Buffer.concat([decipher.update(encIdentity), decipher.final()]);
  return new TpmReader(plain, 'credential').sized('secret');
}

/**
 * Does one private operation with the EK so that the node's activation does not pay for the key's
 * set-up: OpenSSL builds an RSA key's Montgomery contexts and blinding on its first private
 * operation (0.35 ms of a 0.87 ms first decryption, measured), where a TPM's EK is a key already
 * loaded, and the activation runs on the TPM rather than the host's CPU.
 */
function loadEk(ekPrivateKey: KeyObject): void {
  const probe = publicEncrypt(
    { key: createPublicKey(ekPrivateKey), padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' },
    Buffer.alloc(32),
  );
  privateDecrypt({ key: ekPrivateKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' }, probe);
}

/**
 * The identity as a rooted (tpm2-ek) issuer: quotes claim `measurements` and are signed by a
 * fresh attestation key; credentials are activated with the EK's private key. With `loaded`, the
 * EK is set up before the first activation (see loadEk): for storms, where every node activates
 * once and the host's CPU is what is measured.
 */
export function softwareTpmIssuer(
  identity: SoftwareTpmIdentity,
  measurements: Measurements,
  options: { loaded?: boolean } = {},
): Issuer {
  const ekPrivateKey = createPrivateKey(identity.ekPrivateKeyPem);
  if (options.loaded === true) loadEk(ekPrivateKey);
  const tpmIdentity: TpmIdentity = {
    ekPublic: ekPublicArea(ekPrivateKey),
    ekCertificate: identity.ekCertificate,
    ekIntermediates: identity.ekIntermediates,
  };
  const quoting = new SoftwareAttester({ claims: measurements, stolenIdentity: tpmIdentity });
  const ak = quoting.rooted;
  if (ak === undefined) throw new Error('software attester without a rooted identity');
  const rooted: RootedIdentity = {
    identity: tpmIdentity,
    akPublic: ak.akPublic,
    akName: ak.akName,
    ekPublicKeyHash: identity.ekPublicKeyHash,
    activate: (credential) => Promise.resolve(activateInSoftware(ekPrivateKey, ak.akName, credential)),
  };
  return {
    variant: quoting.variant,
    rooted,
    issue: (userData, nonce) => quoting.issue(userData, nonce),
  };
}

/** Issues one EK certificate with the EK CA's intermediate (openssl, as the vendor's CA would). */
async function issueEkCertificate(ca: EkCa, name: string, ekPublicPem: string, workDir: string): Promise<Buffer> {
  const publicPath = join(workDir, `${name}.ek.pub.pem`);
  const certPath = join(workDir, `${name}.ek.der`);
  const extPath = join(workDir, `${name}.ext`);
  await writeFile(publicPath, ekPublicPem);
  await writeFile(
    extPath,
    [
      'basicConstraints=critical,CA:FALSE',
      'keyUsage=critical,keyEncipherment',
      'authorityKeyIdentifier=keyid',
      '',
    ].join('\n'),
  );
  try {
    await run(
      'openssl',
      [
        'x509',
        '-new',
        '-force_pubkey',
        publicPath,
        '-subj',
        `/CN=${name} EK`,
        '-CA',
        ca.intermediateCertPath,
        '-CAkey',
        ca.intermediateKeyPath,
        '-set_serial',
        `0x${Buffer.from(name).toString('hex').slice(0, 30)}01`,
        '-days',
        '3650',
        ekCaDigestOption(ca.keyAlgorithm),
        '-extfile',
        extPath,
        '-outform',
        'DER',
        '-out',
        certPath,
      ],
      { timeout: 30_000 },
    );
    return await readFile(certPath);
  } finally {
    await Promise.all([publicPath, certPath, extPath].map((path) => rm(path, { force: true })));
  }
}

/** Manufactures one software TPM: a fresh RSA-2048 EK and its certificate from `ca`. */
export async function manufactureSoftwareTpm(ca: EkCa, name: string, workDir: string): Promise<SoftwareTpmIdentity> {
  await mkdir(workDir, { recursive: true, mode: 0o700 });
  const { privateKey, publicKey } = await promisify(generateKeyPair)('rsa', { modulusLength: 2048 });
  const ekCertificate = await issueEkCertificate(
    ca,
    name,
    publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    workDir,
  );
  const spki = publicKey.export({ type: 'spki', format: 'der' });
  return {
    name,
    ekPrivateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    ekCertificate,
    ekIntermediates: pemCertificatesToDer(await readFile(ca.intermediateCertPath, 'utf8')),
    ekPublicKeyHash: ekPublicKeyHash(Buffer.from(spki)),
  };
}

interface StoredIdentity {
  name: string;
  ekPrivateKeyPem: string;
  ekCertificate: string;
  ekIntermediates: string[];
  ekPublicKeyHash: string;
}

/** Writes identities as one JSON file (mode 0600: it holds the EKs' private keys). */
export async function saveSoftwareTpms(path: string, identities: readonly SoftwareTpmIdentity[]): Promise<void> {
  const stored: StoredIdentity[] = identities.map((i) => ({
    ...i,
    ekCertificate: i.ekCertificate.toString('base64'),
    ekIntermediates: i.ekIntermediates.map((der) => der.toString('base64')),
  }));
  await writeFile(path, JSON.stringify(stored), { mode: 0o600 });
}

export async function loadSoftwareTpms(path: string): Promise<SoftwareTpmIdentity[]> {
  const stored = JSON.parse(await readFile(path, 'utf8')) as StoredIdentity[];
  return stored.map((s) => ({
    ...s,
    ekCertificate: Buffer.from(s.ekCertificate, 'base64'),
    ekIntermediates: s.ekIntermediates.map((b64) => Buffer.from(b64, 'base64')),
  }));
}

/** Manufactures software TPMs named `<prefix>-<i>` for i in [first, end), a few at a time. */
export async function manufactureSoftwareTpms(
  ca: EkCa,
  prefix: string,
  range: { first: number; end: number },
  workDir: string,
  parallel = 4,
): Promise<SoftwareTpmIdentity[]> {
  const out: SoftwareTpmIdentity[] = [];
  let next = range.first;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      for (let i = next++; i < range.end; i = next++)
        out[i - range.first] = await manufactureSoftwareTpm(ca, `${prefix}-${i}`, workDir);
    }),
  );
  return out;
}
