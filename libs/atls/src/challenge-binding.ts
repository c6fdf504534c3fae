import { createHash } from 'node:crypto';

const CHALLENGE_LABEL = Buffer.from('constellation/atls/challenge/v1');

/**
 * The user data a node attests in the challenge protocol: it binds the ephemeral key the answer
 * will be sealed to and the exact request bytes, so neither can be swapped by a relay.
 */
export function challengeUserData(ephemeralPublicKey: Uint8Array, request: Uint8Array): Buffer {
  const requestHash = createHash('sha256').update(request).digest();
  return createHash('sha256').update(CHALLENGE_LABEL).update(ephemeralPublicKey).update(requestHash).digest();
}
