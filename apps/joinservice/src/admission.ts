import { attestationKeyMachineId } from '@constellation/attestation';
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
   * silent. The answer is kept for the call's admission (see ANSWER_MS).
   */
  vet: (ekPublicKeyHash: string) => Promise<void>;
  admit: Admit;
}

/**
 * How long the registry's answer about a TPM is reused: the hellos naming it meanwhile cost the
 * platform's API nothing (a stranger may hold copies of EK certificates, which are not secret), and
 * a call's admission reuses its vetting's answer. A machine registered just after a refused hello
 * waits this long; one removed from the registry is still admitted as long.
 */
const ANSWER_MS = 10_000;
/** Answers kept at most (each a few hundred bytes), against a flood of distinct genuine TPMs. */
const MAX_ANSWERS = 10_000;

/**
 * Unrooted attestations are known by their attestation key; rooted ones by their EK, looked up in
 * the platform's registry when there is one. Bare metal without a registry admits the EK alone,
 * as a control plane only when `controlPlaneEks` lists it.
 */
export function admission(
  registry: InstanceRegistry | undefined,
  controlPlaneEks: ReadonlySet<string> = new Set(),
): Admission {
  const answers = new Map<string, { at: number; answer: Promise<RegisteredInstance | undefined> }>();
  /** The registry's answer, shared with every ask about the same TPM within ANSWER_MS; failures are not kept. */
  const answer = (from: InstanceRegistry, ekPublicKeyHash: string): Promise<RegisteredInstance | undefined> => {
    const now = Date.now();
    const kept = answers.get(ekPublicKeyHash);
    if (kept !== undefined && now - kept.at < ANSWER_MS) return kept.answer;
    const fresh = from.byEndorsementKey(ekPublicKeyHash);
    answers.delete(ekPublicKeyHash);
    answers.set(ekPublicKeyHash, { at: now, answer: fresh });
    for (const oldest of answers.keys()) {
      if (answers.size <= MAX_ANSWERS) break;
      answers.delete(oldest);
    }
    fresh.catch(() => {
      if (answers.get(ekPublicKeyHash)?.answer === fresh) answers.delete(ekPublicKeyHash);
    });
    return fresh;
  };
  const lookUp = async (from: InstanceRegistry, ekPublicKeyHash: string): Promise<RegisteredInstance> => {
    let instance;
    try {
      instance = await answer(from, ekPublicKeyHash);
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
      if (registry !== undefined) await lookUp(registry, ekPublicKeyHash);
    },
    admit: async (result, proven) => {
      if (proven === undefined) return { machineId: attestationKeyMachineId(result.attestationKeyName) };
      const ek = { machineId: proven.ekPublicKeyHash, ekPublicKeyHash: proven.ekPublicKeyHash };
      if (registry === undefined) {
        const unregistered = {
          mayJoinAsControlPlane: controlPlaneEks.has(proven.ekPublicKeyHash),
          listedControlPlanes: controlPlaneEks.size,
        };
        return { ...ek, unregistered };
      }
      return { ...ek, instance: await lookUp(registry, proven.ekPublicKeyHash) };
    },
  };
}
