import type { Variant } from './variant.js';

/** Produces attestation documents: evidence about this machine bound to user data and a nonce. */
export interface Issuer {
  readonly variant: Variant;
  /** A serialized attestation document whose quotes bind SHA-256(userData || nonce). */
  issue(userData: Uint8Array, nonce: Uint8Array): Promise<Buffer>;
}
