import { timingSafeEqual } from 'node:crypto';
import { quoteExtraData } from '../binding.js';
import { AttestationError } from '../errors.js';
import type { Issuer } from '../issuer.js';
import type { ValidationResult, Validator } from '../validator.js';
import { variantByName } from '../variant.js';
import type { Variant } from '../variant.js';

/*
 * The `dummy` variant: documents are `userData-length (4 bytes) || userData || SHA-256(userData || nonce)`.
 * They prove nothing about the machine; they exist so protocol tests can run without a TPM. The
 * variant is test-only: variantByName refuses it unless a test asks for it explicitly.
 */

const dummyVariant = (): Variant => variantByName('dummy', { allowTestOnly: true });

export class DummyIssuer implements Issuer {
  readonly variant: Variant = dummyVariant();

  issue(userData: Uint8Array, nonce: Uint8Array): Promise<Buffer> {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(userData.length);
    return Promise.resolve(Buffer.concat([length, userData, quoteExtraData(userData, nonce)]));
  }
}

export class DummyValidator implements Validator {
  readonly variant: Variant = dummyVariant();

  validate(document: Uint8Array, nonce: Uint8Array, expectedUserData?: Uint8Array): ValidationResult {
    {
      const doc = Buffer.from(document);
      const length = doc.length >= 4 ? doc.readUInt32BE(0) : -1;
      if (length < 0 || doc.length !== 4 + length + 32)
        throw new AttestationError('malformed', 'dummy attestation is malformed');
      const userData = doc.subarray(4, 4 + length);
      if (!timingSafeEqual(doc.subarray(4 + length), quoteExtraData(userData, nonce))) {
        throw new AttestationError('nonce', 'dummy attestation is not bound to this nonce and user data');
      }
      if (expectedUserData !== undefined && !Buffer.from(expectedUserData).equals(userData)) {
        throw new AttestationError('user-data', 'attested user data does not match what this connection expects');
      }
      return {
        variant: this.variant,
        userData,
        pcrs: new Map(),
        warnings: [],
        attestationKeyName: '',
        akPublic: Buffer.alloc(0),
      };
    }
  }
}
