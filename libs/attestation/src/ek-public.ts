import { createHash, createPublicKey } from 'node:crypto';
import type { JsonWebKey } from 'node:crypto';
import { readCanonicalSpki, spkiKeyJwk } from '@constellation/der';
import { ekTemplate } from '@constellation/tpm';
import type { TpmPublic } from '@constellation/tpm';
import { AttestationError } from './errors.js';

/** Largest SPKI hashed for the registry key (an RSA-16384 SPKI is about 2 KiB). */
const MAX_SPKI_BYTES = 4096;

function fail(message: string): never {
  throw new AttestationError('ek-public', message);
}

function hex(value: number, digits: number): string {
  return `0x${value.toString(16).padStart(digits, '0')}`;
}

function hexBytes(b: Buffer): string {
  return b.length === 0 ? '(empty)' : b.toString('hex');
}

function stripLeadingZeros(b: Buffer): Buffer {
  let i = 0;
  while (i < b.length - 1 && b[i] === 0) i++;
  return b.subarray(i);
}

/** The public area must be the TCG default EK template; only the key itself may differ. */
function checkTemplate(ek: TpmPublic): void {
  const template = ekTemplate(ek.type);
  const field = (name: string, expected: string, actual: string): void => {
    if (expected !== actual) fail(`EK public area ${name} is ${actual}, the TCG default EK template has ${expected}`);
  };
  field('nameAlg', hex(template.nameAlg, 4), hex(ek.nameAlg, 4));
  field('objectAttributes', hex(template.objectAttributes, 8), hex(ek.objectAttributes, 8));
  field('authPolicy', hexBytes(template.authPolicy), hexBytes(ek.authPolicy));
  const sym = (s: TpmPublic['symmetric']): string =>
    `algorithm ${hex(s.algorithm, 4)}/${s.keyBits} bits/mode ${hex(s.mode, 4)}`;
  field('symmetric', sym(template.symmetric), sym(ek.symmetric));
  const scheme = (s: TpmPublic['scheme']): string => `${hex(s.scheme, 4)}/hash ${hex(s.hash, 4)}`;
  field('scheme', scheme(template.scheme), scheme(ek.scheme));
  if (template.type === 'rsa' && ek.type === 'rsa') {
    field('keyBits', String(template.keyBits), String(ek.keyBits));
  } else if (template.type === 'ecc' && ek.type === 'ecc') {
    field('curveID', hex(template.curve, 4), hex(ek.curve, 4));
    field('kdf', scheme(template.kdf), scheme(ek.kdf));
  }
}

/** The certificate's key as a JWK: read directly when canonical, by OpenSSL otherwise. */
function certificateKey(spki: Buffer): JsonWebKey {
  const canonical = readCanonicalSpki(spki);
  if (canonical !== undefined) return spkiKeyJwk(canonical);
  try {
    return createPublicKey({ key: spki, format: 'der', type: 'spki' }).export({ format: 'jwk' });
  } catch (err) {
    return fail(`EK certificate key is not a usable public key (${err instanceof Error ? err.message : String(err)})`);
  }
}

/**
 * The EK the TPM regenerated must be the TCG default EK (ekTemplate('rsa') or ekTemplate('ecc'))
 * and hold the certificate's key. Throws AttestationError('ek-public') naming the difference.
 */
export function checkEkPublic(ekPublic: TpmPublic, verified: { spki: Buffer }): void {
  checkTemplate(ekPublic);
  const jwk = certificateKey(verified.spki);
  if (ekPublic.type === 'rsa') {
    if (jwk.kty !== 'RSA')
      fail(`EK public area is an RSA key, the EK certificate holds an ${jwk.kty ?? 'unknown'} key`);
    const modulus = stripLeadingZeros(Buffer.from(jwk.n ?? '', 'base64url'));
    if (!modulus.equals(stripLeadingZeros(ekPublic.modulus))) {
      fail(
        `EK public area RSA modulus (${ekPublic.modulus.length * 8} bits, ${ekPublic.modulus.subarray(0, 8).toString('hex')}…) differs from the EK certificate's (${modulus.length * 8} bits, ${modulus.subarray(0, 8).toString('hex')}…)`,
      );
    }
    // 0 in the public area means the default exponent 65537.
    const ekExponent = ekPublic.exponent === 0 ? 65537 : ekPublic.exponent;
    const certExponent = BigInt(`0x${Buffer.from(jwk.e ?? '', 'base64url').toString('hex') || '0'}`);
    if (certExponent !== BigInt(ekExponent)) {
      fail(`EK public area RSA exponent ${ekExponent} differs from the EK certificate's ${certExponent}`);
    }
    return;
  }
  if (jwk.kty !== 'EC') fail(`EK public area is an ECC key, the EK certificate holds an ${jwk.kty ?? 'unknown'} key`);
  if (jwk.crv !== 'P-256') fail(`EK certificate key is on curve ${jwk.crv ?? 'unknown'}, the EK public area on P-256`);
  const x = Buffer.from(jwk.x ?? '', 'base64url');
  const y = Buffer.from(jwk.y ?? '', 'base64url');
  if (
    !stripLeadingZeros(x).equals(stripLeadingZeros(ekPublic.x)) ||
    !stripLeadingZeros(y).equals(stripLeadingZeros(ekPublic.y))
  ) {
    fail(
      `EK public area ECC point (x ${ekPublic.x.subarray(0, 8).toString('hex')}…) differs from the EK certificate's (x ${x.subarray(0, 8).toString('hex')}…)`,
    );
  }
}

/** Lower-case hex SHA-256 of the EK's DER SubjectPublicKeyInfo: the instance registry's key. */
export function ekPublicKeyHash(spki: Buffer): string {
  if (spki.length === 0 || spki.length > MAX_SPKI_BYTES) {
    throw new AttestationError('ek-public', `EK SubjectPublicKeyInfo of ${spki.length} bytes is not plausible`);
  }
  return createHash('sha256').update(spki).digest('hex');
}
