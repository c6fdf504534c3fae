import type { EventPolicy } from '@constellation/eventlog';
import { EkIdentityVerifier } from './ek-identity.js';
import { AttestationConfigError } from './errors.js';
import type { Measurements } from './measurements.js';
import { TpmValidator } from './tpm-validator.js';
import type { Validator } from './validator.js';

/**
 * What a verifier is configured with: the variant, the measurements, the rules on boot events
 * (optional) and, for tpm2-ek, the EK roots.
 */
export type AttestationPolicy =
  | {
      variant: 'tpm2-ek';
      measurements: Measurements | (() => Measurements);
      eventPolicy?: EventPolicy | (() => EventPolicy | undefined);
      /** Pinned EK CA roots, DER; never empty. */
      ekRoots: readonly Uint8Array[];
      /** EK CA intermediates the verifier knows, DER. */
      ekIntermediates?: readonly Uint8Array[];
    }
  | {
      variant: 'qemu-vtpm';
      measurements: Measurements | (() => Measurements);
      eventPolicy?: EventPolicy | (() => EventPolicy | undefined);
    };

/** A configured verifier: the quote validator and, for rooted variants, the identity verifier. */
export interface AttestationVerifier {
  validator: Validator;
  /** Present exactly for rooted variants: the caller must prove the peer's identity with it. */
  identity?: EkIdentityVerifier;
}

/**
 * The one place where configuration picks a validator: every program (JoinService, CLI, nodes
 * checking their JoinService) builds its verifier here, so a variant named in configuration can
 * never be parsed and then ignored. `warn` is told on every validation that an unrooted variant
 * proves no identity.
 */
export function createAttestationVerifier(
  policy: AttestationPolicy,
  warn: (message: string) => void = () => undefined,
): AttestationVerifier {
  if (policy.variant === 'qemu-vtpm') {
    return {
      validator: new TpmValidator({
        variant: 'qemu-vtpm',
        measurements: policy.measurements,
        ...(policy.eventPolicy === undefined ? {} : { eventPolicy: policy.eventPolicy }),
        warn,
      }),
    };
  }
  if (policy.ekRoots.length === 0) {
    throw new AttestationConfigError(
      'attestation variant "tpm2-ek" needs at least one pinned EK CA root certificate (the CA of your TPMs or your platform)',
    );
  }
  return {
    validator: new TpmValidator({
      variant: 'tpm2-ek',
      measurements: policy.measurements,
      ...(policy.eventPolicy === undefined ? {} : { eventPolicy: policy.eventPolicy }),
    }),
    identity: new EkIdentityVerifier({ roots: policy.ekRoots, intermediates: policy.ekIntermediates ?? [] }),
  };
}
