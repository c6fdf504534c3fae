import type * as grpc from '@grpc/grpc-js';
import { AttestationError, createAttestationVerifier } from '@constellation/attestation';
import type { Measurements, VerifiedTpmIdentity } from '@constellation/attestation';
import { AttestedChannelCredentials, proveServerIdentity } from '@constellation/atls';
import { createClient } from '@constellation/proto';
import { attestationPolicy } from './constellation-conf.js';
import type { ClusterAttestation } from './constellation-conf.js';

/** The node failed attestation (its quotes or its TPM identity): nothing may be sent to it. */
export class AttestationRefusedError extends Error {
  override readonly name = 'AttestationRefusedError';
}

export interface AttestedConnection<C extends grpc.Client> {
  client: C;
  credentials: AttestedChannelCredentials;
  /** The node's proven TPM identity (tpm2-ek); undefined for the unrooted qemu-vtpm variant. */
  identity: VerifiedTpmIdentity | undefined;
}

type ClientConstructor<C> = new (
  address: string,
  credentials: grpc.ChannelCredentials,
  options: grpc.ChannelOptions,
) => C;

/**
 * Dials `endpoint` over server-attested TLS and, for tpm2-ek, proves the node's TPM identity by
 * credential activation on the same connection, before the caller sends anything. Refusals are
 * AttestationRefusedError naming the reason; an unreachable node is the transport's UNAVAILABLE
 * error, which callers may retry. The caller closes the client.
 */
export async function connectAttested<C extends grpc.Client>(
  Client: ClientConstructor<C>,
  endpoint: string,
  attestation: ClusterAttestation,
  options: { measurements?: Measurements; enforceEventPolicy?: boolean; warn?: (message: string) => void } = {},
): Promise<AttestedConnection<C>> {
  const verifier = createAttestationVerifier(
    attestationPolicy(attestation, options.measurements, {
      ...(options.enforceEventPolicy === undefined ? {} : { enforceEventPolicy: options.enforceEventPolicy }),
    }),
    options.warn,
  );
  const credentials = new AttestedChannelCredentials([verifier.validator]);
  const client = createClient(Client, endpoint, credentials.credentials, credentials.channelOptions);
  if (verifier.identity === undefined) return { client, credentials, identity: undefined };
  try {
    const identity = await proveServerIdentity(client.getChannel(), credentials, verifier.identity);
    return { client, credentials, identity };
  } catch (err) {
    client.close();
    const refusal = credentials.failure ?? (err instanceof AttestationError ? err : undefined);
    if (refusal !== undefined) throw new AttestationRefusedError(refusal.message, { cause: err });
    throw err;
  }
}
