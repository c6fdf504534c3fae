import { createHash } from 'node:crypto';

/** The quote's extraData: SHA-256(userData || nonce). Binds the caller's data and fresh nonce into the signed quote. */
export function quoteExtraData(userData: Uint8Array, nonce: Uint8Array): Buffer {
  return createHash('sha256').update(userData).update(nonce).digest();
}
