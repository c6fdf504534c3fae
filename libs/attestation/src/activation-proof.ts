import { createHmac, timingSafeEqual } from 'node:crypto';
import { AttestationError } from './errors.js';

const ACTIVATION_LABEL = Buffer.from('constellation/atls/activation/v1');

/**
 * What a TPM that activated a credential sends back instead of the secret itself: an HMAC keyed
 * with the secret over this exchange's nonce and the AK name, so the proof is useless anywhere
 * else and the secret never crosses the wire.
 */
export function activationProof(secret: Uint8Array, nonce: Uint8Array, akName: Uint8Array): Buffer {
  return createHmac('sha256', secret).update(ACTIVATION_LABEL).update(nonce).update(akName).digest();
}

/** Throws AttestationError("activation") unless `proof` is the proof for this secret, nonce and AK. */
export function checkActivationProof(
  proof: Uint8Array,
  secret: Uint8Array,
  nonce: Uint8Array,
  akName: Uint8Array,
): void {
  const expected = activationProof(secret, nonce, akName);
  if (proof.length !== expected.length || !timingSafeEqual(proof, expected)) {
    throw new AttestationError(
      'activation',
      proof.length === 0
        ? 'no credential activation proof: the node did not prove its attestation key lives in the certified TPM'
        : 'credential activation failed: the attestation key does not live in the TPM that holds the certified endorsement key',
    );
  }
}
