import type { ValidationResult, VerifiedTpmIdentity } from '@constellation/attestation';
import { Refusal, errorMessage } from '@constellation/errors';
import { JOINSERVICE_DEFAULTS } from './config.js';
import type { InstanceRegistry, RegisteredInstance } from './instance-registry.js';
import type { AdmittedNode } from './ticket-service.js';

/** Decides who an attested node is: everything a ticket grants follows from this, never from the request. */
export type Admit = (result: ValidationResult, proven: VerifiedTpmIdentity | undefined) => Promise<AdmittedNode>;

export interface Admission {
  /**
   * Before the challenge: refuses a TPM (by its verified EK certificate's key) the registry does
   * not know, so that a genuine TPM of someone else's machine holds no slot while its sender stays
   * silent. The answer is kept for the call's admission.
   */
  vet: (ekPublicKeyHash: string) => Promise<void>;
  admit: Admit;
}

/** How long a vetted TPM's registry answer is reused: the challenge's TTL and its answer's checks. */
const VETTED_MS = 30_000;
/** Vetted answers kept at most (each a few hundred bytes), against a flood of distinct genuine TPMs. */
const MAX_VETTED = 10_000;

/**
 * Unrooted attestations are known by their attestation key; rooted ones by their EK, looked up in
 * the platform's registry when there is one. Bare metal without a registry admits the EK alone,
 * as a control plane only when `controlPlaneEks` lists it.
 */
export function admission(
  registry: InstanceRegistry | undefined,
  controlPlaneEks: ReadonlySet<string> = new Set(),
): Admission {
  const vetted = new Map<string, { at: number; instance: RegisteredInstance }>();
  const lookUp = async (ekPublicKeyHash: string): Promise<RegisteredInstance> => {
    let instance;
    try {
      instance = await registry?.byEndorsementKey(ekPublicKeyHash);
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
        `endorsement key sha256:${ekPublicKeyHash} is not registered: the platform knows no machine with this TPM`,
      );
    }
    return instance;
  };
  return {
    vet: async (ekPublicKeyHash) => {
      if (registry === undefined) return;
      const instance = await lookUp(ekPublicKeyHash);
      vetted.delete(ekPublicKeyHash);
      vetted.set(ekPublicKeyHash, { at: Date.now(), instance });
      for (const oldest of vetted.keys()) {
        if (vetted.size <= MAX_VETTED) break;
        vetted.delete(oldest);
      }
    },
    admit: async (result, proven) => {
      if (proven === undefined) return { machineId: `ak-${result.attestationKeyName}` };
      const ek = { machineId: proven.ekPublicKeyHash, ekPublicKeyHash: proven.ekPublicKeyHash };
      if (registry === undefined) {
        const unregistered = {
          mayJoinAsControlPlane: controlPlaneEks.has(proven.ekPublicKeyHash),
          listedControlPlanes: controlPlaneEks.size,
        };
        return { ...ek, unregistered };
      }
      const recent = vetted.get(proven.ekPublicKeyHash);
      vetted.delete(proven.ekPublicKeyHash);
      const instance =
        recent !== undefined && Date.now() - recent.at < VETTED_MS
          ? recent.instance
          : await lookUp(proven.ekPublicKeyHash);
      return { ...ek, instance };
    },
  };
}
