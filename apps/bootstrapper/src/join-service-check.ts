import { createAttestationVerifier } from '@constellation/attestation';
import type { Measurements, VerifiedTpmIdentity } from '@constellation/attestation';
import type { ServiceCheck } from '@constellation/atls';
import type { Logger } from '@constellation/logger';
import type { Tpm } from '@constellation/tpm';
import type { MetadataClient } from './metadata-client.js';

export interface JoinServiceCheckOptions {
  tpm: Tpm;
  metadata: MetadataClient;
  /** Pinned EK CA roots (DER) baked into the node image. */
  ekRoots: readonly Uint8Array[];
  ekIntermediates?: readonly Uint8Array[];
  /** The PCRs the node image measures; the JoinService's host must show the same values. */
  measuredPcrs: readonly number[];
  logger: Logger;
}

/**
 * What a fresh node requires of a JoinService before it locks its TPM or re-keys its disk with a
 * ticket: the service's host attests with an EK that chains to the pinned roots and activates a
 * credential; it runs this node's image (the node's own values of the measured PCRs, read before
 * it committed to anything); it belongs to a cluster (PCR 15 marked); and the platform registers
 * it as a control-plane node.
 */
export async function joinServiceCheck(options: JoinServiceCheckOptions): Promise<ServiceCheck> {
  const pcrs = options.measuredPcrs.filter((pcr) => pcr !== 15);
  const own = await options.tpm.pcrRead('sha256', pcrs);
  const measurements: Measurements = new Map(
    pcrs.map((pcr) => [pcr, { expected: own.get(pcr) ?? Buffer.alloc(32), warnOnly: false }]),
  );
  const verifier = createAttestationVerifier({
    variant: 'tpm2-ek',
    measurements,
    ekRoots: options.ekRoots,
    ekIntermediates: options.ekIntermediates ?? [],
  });
  return {
    verifier,
    admit: async (identity: VerifiedTpmIdentity, result) => {
      if (result.pcrs.get(15)?.equals(Buffer.alloc(32)) !== false)
        throw new Error('its host has not joined a cluster (PCR 15 is not marked)');
      const instance = await options.metadata.instanceByEndorsementKey(identity.ekPublicKeyHash);
      if (instance === undefined)
        throw new Error(`its host (EK sha256:${identity.ekPublicKeyHash}) is not a machine the platform knows`);
      if (instance.role !== 'control-plane')
        throw new Error(`its host ${instance.name} is registered as a ${instance.role}, not a control-plane node`);
      options.logger.info('JoinService host proven', {
        host: instance.name,
        ekPublicKeyHash: identity.ekPublicKeyHash,
      });
    },
  };
}
