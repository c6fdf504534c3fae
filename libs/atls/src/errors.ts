/** An aTLS protocol failure that is not an attestation verdict (missing extension, reused nonce, bad framing). */
export class AtlsError extends Error {
  override readonly name = 'AtlsError';
}
