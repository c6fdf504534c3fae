import type { ValidationResult, VerifiedTpmIdentity } from '@constellation/attestation';
import { Refusal, errorMessage } from '@constellation/errors';
import { JOINSERVICE_DEFAULTS } from './config.js';
import type { InstanceRegistry } from './instance-registry.js';
import type { AdmittedNode } from './ticket-service.js';

/** Decides who an attested node is: everything a ticket grants follows from this, never from the request. */
export type Admission = (result: ValidationResult, proven: VerifiedTpmIdentity | undefined) => Promise<AdmittedNode>;

/**
 * Unrooted attestations are known by their attestation key; rooted ones by their EK, looked up in
 * the platform's registry when there is one. Bare metal without a registry admits the EK alone,
 * as a control plane only when `controlPlaneEks` lists it.
 */
export function admission(
  registry: InstanceRegistry | undefined,
  controlPlaneEks: ReadonlySet<string> = new Set(),
): Admission {
  return async (result, proven) => {
    if (proven === undefined) return { machineId: `ak-${result.attestationKeyName}` };
    const ek = { machineId: proven.ekPublicKeyHash, ekPublicKeyHash: proven.ekPublicKeyHash };
    if (registry === undefined) {
      const unregistered = {
        mayJoinAsControlPlane: controlPlaneEks.has(proven.ekPublicKeyHash),
        listedControlPlanes: controlPlaneEks.size,
      };
      return { ...ek, unregistered };
    }
    let instance;
    try {
      instance = await registry.byEndorsementKey(proven.ekPublicKeyHash);
    } catch (err) {
      throw new Refusal(
        'unavailable',
        'registry-unavailable',
        `the instance registry is not reachable: ${errorMessage(err)}`,
        { retryAfterMs: JOINSERVICE_DEFAULTS.registryRetryAfterMs, cause: err },
      );
    }
    if (instance === undefined) {
      throw new Refusal(
        'denied',
        'unregistered-ek',
        `endorsement key sha256:${proven.ekPublicKeyHash} is not registered: the platform knows no machine with this TPM`,
      );
    }
    return { ...ek, instance };
  };
}
