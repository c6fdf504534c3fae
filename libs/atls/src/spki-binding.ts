import { createHash } from 'node:crypto';

/** The user data an attested-TLS certificate binds: SHA-256 of its SubjectPublicKeyInfo (DER). */
export function spkiUserData(spki: Uint8Array): Buffer {
  return createHash('sha256').update(spki).digest();
}
