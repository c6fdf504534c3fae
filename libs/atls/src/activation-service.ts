import * as grpc from '@grpc/grpc-js';
import { withTpmPriority } from '@constellation/tpm';
import { activationProof } from '@constellation/attestation';
import type {
  ActivationProtocol,
  EkIdentityVerifier,
  RootedIdentity,
  VerifiedTpmIdentity,
} from '@constellation/attestation';
import { ActivationServiceClient, ActivationServiceService, createClient } from '@constellation/proto';
import type { ActivateRequest, ActivateResponse } from '@constellation/proto';
import type { AttestedChannelCredentials } from './attested-channel.js';
import { AtlsError, ServerBusyError } from './errors.js';
import { readRetryAfter, retryAfterMetadata } from '@constellation/proto';
import { errorMessage } from '@constellation/errors';

const NONCE_BYTES = 32;

type Channel = ReturnType<grpc.Client['getChannel']>;

/**
 * Connects `channel` and resolves once it is READY. A refused attestation fails at once with the
 * reason, instead of grpc-js retrying the handshake until the deadline.
 */
async function connected(channel: Channel, credentials: AttestedChannelCredentials, deadline: number): Promise<void> {
  for (;;) {
    const state = channel.getConnectivityState(true);
    if (state === grpc.connectivityState.READY) return;
    if (credentials.failure !== undefined) throw credentials.failure;
    if (state === grpc.connectivityState.TRANSIENT_FAILURE || state === grpc.connectivityState.SHUTDOWN) {
      // Nothing listens, or the connection broke: retryable, like any UNAVAILABLE call.
      throw Object.assign(new AtlsError('the node is not reachable (no connection could be established)'), {
        code: grpc.status.UNAVAILABLE,
      });
    }
    await new Promise<void>((resolve, reject) => {
      channel.watchConnectivityState(state, deadline, (err) => {
        if (err) reject(credentials.failure ?? new AtlsError(`could not connect: ${err.message}`));
        else resolve();
      });
    });
  }
}

/**
 * What credential activations may cost this node: each one is TPM work (an AK and a session, an
 * RSA decryption with the EK), so a connection gets one (a client needs exactly one to prove the
 * node), and at most `maxConcurrent` run at once across connections; more are refused at once with
 * a retryable status instead of queueing on the TPM.
 */
export class ActivationBudget {
  private readonly used = new Set<string>();
  private readonly perConnection: boolean;
  private readonly maxConcurrent: number;
  private inFlight = 0;

  constructor(options: { perConnection: boolean; maxConcurrent?: number }) {
    this.perConnection = options.perConnection;
    this.maxConcurrent = options.maxConcurrent ?? 2;
  }

  /** Takes one activation for `peer`, or says why not. */
  take(peer: string): Partial<grpc.StatusObject> | undefined {
    if (this.perConnection && this.used.has(peer)) {
      return {
        code: grpc.status.RESOURCE_EXHAUSTED,
        details: 'one credential activation per attested connection; open a new connection to prove the node again',
      };
    }
    if (this.inFlight >= this.maxConcurrent) {
      return {
        code: grpc.status.UNAVAILABLE,
        details: 'the TPM is busy with other activations; retry',
        metadata: retryAfterMetadata(500),
      };
    }
    if (this.perConnection) this.used.add(peer);
    this.inFlight++;
    return undefined;
  }

  release(): void {
    this.inFlight--;
  }

  /** The connection closed: its address may be reused by a new connection. */
  forget(peer: string): void {
    this.used.delete(peer);
  }
}

/**
 * What an ActivationService's proofs are bound to: an attested-TLS server's to its protocol and to
 * the connection's own nonce (the one in its SNI, which the client's attestation check used), the
 * attestation agent's to the host proof, for the nonce its local caller (the JoinService) passes on.
 */
export type ActivationBinding =
  | { protocol: Extract<ActivationProtocol, 'atls-server'>; connectionNonce: (peer: string) => Buffer | undefined }
  | { protocol: Extract<ActivationProtocol, 'host'> };

/**
 * Serves constellation.atls.v1.ActivationService: the node's TPM activates the client's credential
 * and answers with a proof bound to `binding`'s protocol and the nonce. The secret itself never
 * leaves the node.
 */
export function addActivationService(
  server: grpc.Server,
  rooted: RootedIdentity,
  budget: ActivationBudget,
  binding: ActivationBinding,
): void {
  server.addService(ActivationServiceService, {
    activate: (
      call: grpc.ServerUnaryCall<ActivateRequest, ActivateResponse>,
      callback: grpc.sendUnaryData<ActivateResponse>,
    ) => {
      const { credential, nonce } = call.request;
      if (credential === undefined || nonce.length !== NONCE_BYTES) {
        callback({
          code: grpc.status.INVALID_ARGUMENT,
          details: `an activation request needs a credential and a ${NONCE_BYTES}-byte nonce`,
        });
        return;
      }
      // Checked before the budget: a wrong nonce costs the TPM nothing and the connection no activation.
      if (binding.protocol === 'atls-server' && binding.connectionNonce(call.getPeer())?.equals(nonce) !== true) {
        callback({
          code: grpc.status.INVALID_ARGUMENT,
          details:
            "the activation nonce must be this connection's aTLS nonce (the one in its server name): a proof is bound to the connection whose attestation the client checked",
        });
        return;
      }
      const refusal = budget.take(call.getPeer());
      if (refusal !== undefined) {
        callback(refusal);
        return;
      }
      // Work for a remote caller: background priority on the TPM.
      withTpmPriority('background', () => rooted.activate(credential))
        .then(
          (secret) => {
            callback(null, { proof: activationProof(binding.protocol, secret, nonce, rooted.akName) });
          },
          (err: unknown) => {
            callback({
              code: grpc.status.PERMISSION_DENIED,
              details: `this TPM cannot activate the credential: ${errorMessage(err)}`,
            });
          },
        )
        .finally(() => {
          budget.release();
        });
    },
  });
}

/**
 * The client's half for attested-TLS endpoints, run on the attested channel after the TLS
 * handshake validated the server's quotes and before anything secret is sent: validates the
 * server's EK certificate path, makes a credential for its AK, and checks the proof that its TPM
 * activated it. Returns the proven identity; throws AttestationError or AtlsError.
 */
export async function proveServerIdentity(
  channel: Channel,
  credentials: AttestedChannelCredentials,
  verifier: EkIdentityVerifier,
  deadlineMs = 20_000,
): Promise<VerifiedTpmIdentity> {
  // The attested client's channel, made by createClient: it carries the message limits.
  const client = createClient(ActivationServiceClient, '', grpc.credentials.createInsecure(), {
    channelOverride: channel,
  });
  const deadline = Date.now() + deadlineMs;
  await connected(channel, credentials, deadline);
  const result = credentials.result;
  if (result === undefined) throw credentials.failure ?? new AtlsError('the server presented no attestation');
  const pending = await verifier.challenge(result.identityClaim, result.akPublic);
  // The connection's own nonce: the server binds its proof to it, as the quotes checked in the
  // handshake are.
  const nonce = credentials.nonce;
  const response = await new Promise<ActivateResponse>((resolve, reject) => {
    client.activate({ credential: pending.credential, nonce }, new grpc.Metadata(), { deadline }, (err, answer) => {
      if (err === null) {
        resolve(answer);
        return;
      }
      const message = `the server did not activate its credential: ${err.details}`;
      if (err.code !== grpc.status.UNAVAILABLE) {
        reject(new AtlsError(message, { cause: err }));
        return;
      }
      reject(new ServerBusyError(message, readRetryAfter(err), { cause: err }));
    });
  });
  return pending.prove(response.proof, nonce, 'atls-server');
}
