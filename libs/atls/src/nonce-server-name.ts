/*
 * The attested-TLS nonce travels in the TLS ClientHello's server name (SNI): 32 random bytes
 * as two 32-character hex labels under a fixed suffix, so it is a valid DNS name and survives
 * case folding.
 */

export const NONCE_BYTES = 32;
const SUFFIX = 'nonce.atls';
const PATTERN = /^([0-9a-f]{32})\.([0-9a-f]{32})\.nonce\.atls$/;

/** The SNI server name that carries `nonce`. */
export function nonceToServerName(nonce: Uint8Array): string {
  if (nonce.length !== NONCE_BYTES)
    throw new RangeError(`aTLS nonce must be ${NONCE_BYTES} bytes, got ${nonce.length}`);
  const hex = Buffer.from(nonce).toString('hex');
  return `${hex.slice(0, 32)}.${hex.slice(32)}.${SUFFIX}`;
}

/** The nonce in an SNI server name, or undefined when the name is not an aTLS nonce. */
export function serverNameToNonce(serverName: string): Buffer | undefined {
  const match = PATTERN.exec(serverName.toLowerCase());
  if (match === null) return undefined;
  return Buffer.from(`${match[1] ?? ''}${match[2] ?? ''}`, 'hex');
}
