import { createHmac, timingSafeEqual } from 'node:crypto';
import { AttestationError } from './errors.js';

/**
 * The exchanges a TPM proves a credential activation in. Each has a label of its own, so that a
 * proof made in one verifies in no other: a genuine node's attested-TLS server activated any
 * credential for a nonce of the caller's choice, and its proof, made with the join's construction
 * and label, was accepted by a join challenge (issue 42).
 */
export type ActivationProtocol = 'join' | 'atls-server' | 'host';

const PROTOCOLS: Record<ActivationProtocol, { label: Buffer; name: string }> = {
  // The node proves its AK to the JoinService (the challenge's nonce).
  join: { label: Buffer.from('constellation/join/activation/v1'), name: 'a join challenge' },
  // A node's attested-TLS server proves its AK to a client (the connection's SNI nonce).
  'atls-server': {
    label: Buffer.from('constellation/atls/server-activation/v1'),
    name: 'an attested-TLS server activation',
  },
  // The JoinService's host proves its AK to the joining node (the node's service nonce).
  host: { label: Buffer.from('constellation/join/host-activation/v1'), name: "the JoinService host's proof" },
};

const ALL_PROTOCOLS = Object.keys(PROTOCOLS) as ActivationProtocol[];

/** The label a protocol's proofs are made with. */
export function activationLabel(protocol: ActivationProtocol): string {
  return PROTOCOLS[protocol].label.toString();
}

/**
 * What a TPM that activated a credential sends back instead of the secret itself: an HMAC keyed
 * with the secret over the protocol's label, this exchange's nonce and the AK name, so the proof is
 * useless in any other exchange and the secret never crosses the wire.
 */
export function activationProof(
  protocol: ActivationProtocol,
  secret: Uint8Array,
  nonce: Uint8Array,
  akName: Uint8Array,
): Buffer {
  return createHmac('sha256', secret).update(PROTOCOLS[protocol].label).update(nonce).update(akName).digest();
}

const matches = (proof: Uint8Array, expected: Buffer): boolean =>
  proof.length === expected.length && timingSafeEqual(proof, expected);

/**
 * Throws AttestationError("activation") unless `proof` is the `protocol` proof for this secret,
 * nonce and AK. A proof that is valid for another protocol is AttestationError("activation-protocol"),
 * naming both: the TPM did activate the credential, but for a different exchange.
 */
export function checkActivationProof(
  protocol: ActivationProtocol,
  proof: Uint8Array,
  secret: Uint8Array,
  nonce: Uint8Array,
  akName: Uint8Array,
): void {
  if (matches(proof, activationProof(protocol, secret, nonce, akName))) return;
  const other = ALL_PROTOCOLS.find((p) => p !== protocol && matches(proof, activationProof(p, secret, nonce, akName)));
  if (other !== undefined) {
    const made = PROTOCOLS[other];
    const wanted = PROTOCOLS[protocol];
    throw new AttestationError(
      'activation-protocol',
      `activation proof protocol mismatch: the proof was made for ${made.name} (${made.label.toString()}), not for ${wanted.name} (${wanted.label.toString()}); a proof made in one protocol is refused in every other`,
    );
  }
  throw new AttestationError(
    'activation',
    proof.length === 0
      ? 'no credential activation proof: the node did not prove its attestation key lives in the certified TPM'
      : 'credential activation failed: the attestation key does not live in the TPM that holds the certified endorsement key',
  );
}
