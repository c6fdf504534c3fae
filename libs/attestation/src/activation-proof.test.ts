import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { activationLabel, activationProof, checkActivationProof } from './activation-proof.js';
import type { ActivationProtocol } from './activation-proof.js';
import { AttestationError } from './errors.js';

const protocols: ActivationProtocol[] = ['join', 'atls-server', 'host'];

/** The error `check` throws (it must throw an AttestationError). */
function refusal(check: () => void): AttestationError {
  let caught: unknown;
  try {
    check();
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(AttestationError);
  return caught as AttestationError;
}

describe('activation proofs are bound to their protocol', () => {
  const secret = randomBytes(32);
  const nonce = randomBytes(32);
  const akName = randomBytes(34);

  it('each protocol has a label of its own', () => {
    expect(protocols.map(activationLabel)).toEqual([
      'constellation/join/activation/v1',
      'constellation/atls/server-activation/v1',
      'constellation/join/host-activation/v1',
    ]);
  });

  for (const made of protocols) {
    for (const wanted of protocols) {
      if (made === wanted) {
        it(`accepts a ${made} proof as a ${wanted} proof`, () => {
          expect(() => {
            checkActivationProof(wanted, activationProof(made, secret, nonce, akName), secret, nonce, akName);
          }).not.toThrow();
        });
        continue;
      }
      it(`refuses a ${made} proof where a ${wanted} proof is due, naming both`, () => {
        const err = refusal(() => {
          checkActivationProof(wanted, activationProof(made, secret, nonce, akName), secret, nonce, akName);
        });
        expect(err.reason).toBe('activation-protocol');
        expect(err.message).toMatch(/^activation proof protocol mismatch: the proof was made for /);
        expect(err.message).toContain(`(${activationLabel(made)}), not for`);
        expect(err.message).toContain(`(${activationLabel(wanted)}); a proof made in one protocol`);
      });
    }
  }

  it('a proof for another nonce, AK or secret is a failed activation, not a protocol mismatch', () => {
    const proof = activationProof('join', secret, nonce, akName);
    for (const check of [
      () => {
        checkActivationProof('join', proof, secret, randomBytes(32), akName);
      },
      () => {
        checkActivationProof('join', proof, secret, nonce, randomBytes(34));
      },
      () => {
        checkActivationProof('join', proof, randomBytes(32), nonce, akName);
      },
    ]) {
      expect(refusal(check).message).toBe(
        'credential activation failed: the attestation key does not live in the TPM that holds the certified endorsement key',
      );
    }
    expect(
      refusal(() => {
        checkActivationProof('join', Buffer.alloc(0), secret, nonce, akName);
      }).message,
    ).toMatch(/^no credential activation proof/);
  });
});
