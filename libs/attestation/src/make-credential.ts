import { constants, createCipheriv, createECDH, createHmac, publicEncrypt, randomBytes } from 'node:crypto';
import { TPM_ALG, TPM_ECC, TPMA_OBJECT, TpmWriter, hashAlgorithm, publicKeyObject } from '@constellation/tpm';
import type { EccPublic, RsaPublic, TpmPublic } from '@constellation/tpm';
import { AttestationError } from './errors.js';
import { kdfa, kdfe } from './kdf.js';

/** What the verifier sends to the attester for TPM2_ActivateCredential. */
export interface Credential {
  /** Content of the TPM2B_ID_OBJECT (without its size): TPM2B_DIGEST integrityHMAC || encIdentity. */
  credentialBlob: Buffer;
  /** Content of the TPM2B_ENCRYPTED_SECRET (without its size): the OAEP ciphertext or the ephemeral ECC point. */
  encryptedSecret: Buffer;
}

/** Largest secret a TPM2B_DIGEST carries on every TPM (SHA-256 digest size). */
export const MAX_CREDENTIAL_SECRET_BYTES = 32;

/** TPM_ECC_NIST_P384; @constellation/tpm only names P-256. */
const TPM_ECC_NIST_P384 = 0x0004;

const CURVES = new Map<number, { node: string; bytes: number; label: string }>([
  [TPM_ECC.NIST_P256, { node: 'prime256v1', bytes: 32, label: 'P-256' }],
  [TPM_ECC_NIST_P384, { node: 'secp384r1', bytes: 48, label: 'P-384' }],
]);

const SHA256_NAME_BYTES = 34;

// Labels are zero-terminated on the wire; the KDFs add the zero, OAEP gets it explicitly.
const IDENTITY_LABEL = 'IDENTITY';
const OAEP_IDENTITY_LABEL = Buffer.from('IDENTITY\0', 'latin1');

function hex16(value: number): string {
  return `0x${value.toString(16).padStart(4, '0')}`;
}

/** The EK must be a key ActivateCredential accepts and we can encrypt to: restricted decrypt, AES-128-CFB, SHA-256. */
function checkEkForCredential(ek: TpmPublic): void {
  const fail = (what: string): never => {
    throw new AttestationError('ek-public', `EK public area cannot receive a credential: ${what}`);
  };
  const required = TPMA_OBJECT.restricted | TPMA_OBJECT.decrypt;
  if ((ek.objectAttributes & required) !== required) {
    fail(`objectAttributes 0x${ek.objectAttributes.toString(16)} lack restricted|decrypt`);
  }
  if ((ek.objectAttributes & TPMA_OBJECT.sign) !== 0) fail('objectAttributes include sign');
  if (ek.nameAlg !== TPM_ALG.SHA256) fail(`nameAlg ${hex16(ek.nameAlg)}, expected SHA-256 (0x000b)`);
  const sym = ek.symmetric;
  if (sym.algorithm !== TPM_ALG.AES || sym.keyBits !== 128 || sym.mode !== TPM_ALG.CFB) {
    fail(
      `symmetric algorithm ${hex16(sym.algorithm)}/${sym.keyBits} bits/mode ${hex16(sym.mode)}, expected AES-128-CFB`,
    );
  }
}

/** The AK name must be 0x000b || SHA-256(TPMT_PUBLIC). */
function checkAkName(akName: Buffer): void {
  if (akName.length !== SHA256_NAME_BYTES || akName.readUInt16BE(0) !== TPM_ALG.SHA256) {
    throw new AttestationError(
      'attestation-key',
      `AK name must be ${SHA256_NAME_BYTES} bytes starting with 000b (SHA-256), got ${akName.length} bytes starting with ${akName.subarray(0, 2).toString('hex')}`,
    );
  }
}

/** RSA EK: a random seed, OAEP-encrypted with label "IDENTITY\0" (Part 1 Annex B.10.4). */
function rsaSeed(ek: RsaPublic, seedBytes: number): { seed: Buffer; encryptedSecret: Buffer } {
  if (ek.keyBits < 2048 || ek.modulus.length * 8 !== ek.keyBits) {
    throw new AttestationError(
      'ek-public',
      `EK RSA key: keyBits ${ek.keyBits} with a ${ek.modulus.length * 8}-bit modulus, expected at least 2048 bits and equal`,
    );
  }
  const seed = randomBytes(seedBytes);
  const encryptedSecret = publicEncrypt(
    {
      key: publicKeyObject(ek),
      padding: constants.RSA_PKCS1_OAEP_PADDING,
      oaepHash: hashAlgorithm(ek.nameAlg).name,
      oaepLabel: OAEP_IDENTITY_LABEL,
    },
    seed,
  );
  return { seed, encryptedSecret };
}

/** ECC EK: ephemeral ECDH; seed = KDFe(nameAlg, Z.x, "IDENTITY", ephemeral.x, EK.x) (Part 1 Annex C.6.4). */
function eccSeed(ek: EccPublic, seedBytes: number): { seed: Buffer; encryptedSecret: Buffer } {
  const curve = CURVES.get(ek.curve);
  if (curve === undefined) {
    throw new AttestationError('ek-public', `EK ECC curve ${hex16(ek.curve)} is not supported (P-256 or P-384)`);
  }
  if (ek.x.length > curve.bytes || ek.y.length > curve.bytes || ek.x.length === 0 || ek.y.length === 0) {
    throw new AttestationError(
      'ek-public',
      `EK ${curve.label} point has ${ek.x.length}/${ek.y.length}-byte coordinates, expected at most ${curve.bytes}`,
    );
  }
  const pad = (b: Buffer): Buffer => Buffer.concat([Buffer.alloc(curve.bytes - b.length), b]);
  const ecdh = createECDH(curve.node);
  const ephemeral = ecdh.generateKeys(); // uncompressed: 04 || x || y
  let z: Buffer;
  try {
    // Node checks that the EK point lies on the curve; its output is the x coordinate, padded.
    z = ecdh.computeSecret(Buffer.concat([Buffer.from([4]), pad(ek.x), pad(ek.y)]));
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new AttestationError('ek-public', `EK ${curve.label} point is not on the curve (${why})`);
  }
  const ephemeralX = ephemeral.subarray(1, 1 + curve.bytes);
  const ephemeralY = ephemeral.subarray(1 + curve.bytes);
  const { name } = hashAlgorithm(ek.nameAlg);
  // partyVInfo is the EK's x exactly as in its public area: that is what the TPM hashes.
  const seed = kdfe(name, z, IDENTITY_LABEL, ephemeralX, ek.x, seedBytes * 8);
  const encryptedSecret = new TpmWriter().sized(ephemeralX).sized(ephemeralY).toBuffer();
  return { seed, encryptedSecret };
}

/**
 * TPM2_MakeCredential done by the verifier (TPM 2.0 Part 1 §24, Annex B.10.4): only the TPM
 * that holds the private part of `ekPublic`, and a loaded object named `akName` beside it, can
 * recover `secret` with TPM2_ActivateCredential.
 */
export function makeCredential(ekPublic: TpmPublic, akName: Buffer, secret: Buffer): Credential {
  checkEkForCredential(ekPublic);
  checkAkName(akName);
  if (secret.length < 1 || secret.length > MAX_CREDENTIAL_SECRET_BYTES) {
    throw new RangeError(`credential secret must be 1 to ${MAX_CREDENTIAL_SECRET_BYTES} bytes, got ${secret.length}`);
  }
  const { name: hash, size: digestBytes } = hashAlgorithm(ekPublic.nameAlg);
  const { seed, encryptedSecret } =
    ekPublic.type === 'rsa' ? rsaSeed(ekPublic, digestBytes) : eccSeed(ekPublic, digestBytes);

  const symKey = kdfa(hash, seed, 'STORAGE', akName, Buffer.alloc(0), ekPublic.symmetric.keyBits);
  const plain = new TpmWriter().sized(secret).toBuffer(); // TPM2B_DIGEST(secret)
  const cipher = createCipheriv('aes-128-cfb', symKey, Buffer.alloc(16));
  const encIdentity = Buffer.concat([cipher.update(plain), cipher.final()]);

  const hmacKey = kdfa(hash, seed, 'INTEGRITY', Buffer.alloc(0), Buffer.alloc(0), digestBytes * 8);
  const integrity = createHmac(hash, hmacKey).update(encIdentity).update(akName).digest();

  return { credentialBlob: new TpmWriter().sized(integrity).bytes(encIdentity).toBuffer(), encryptedSecret };
}
