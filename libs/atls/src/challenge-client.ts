import type * as grpc from '@grpc/grpc-js';
import { randomBytes } from 'node:crypto';
import { AttestationError, activationProof } from '@constellation/attestation';
import type {
  AttestationVerifier,
  Issuer,
  PendingActivation,
  ValidationResult,
  VerifiedTpmIdentity,
} from '@constellation/attestation';
import type { AttestationChallenge, SealedResponse } from '@constellation/proto';
import { challengeUserData } from './challenge-binding.js';
import { CHALLENGE_PROTOCOL_VERSION } from './challenge-messages.js';
import type { ChallengeClientMessage, ChallengeServerMessage } from './challenge-messages.js';
import { AtlsError } from './errors.js';
import { ephemeralKey, open } from './seal.js';
import { serviceUserData } from './service-attester.js';
import { errorMessage } from '@constellation/errors';

/**
 * What a node requires of the service before it trusts an answer: the service's host attests
 * (quotes matching `verifier`'s measurements, EK certificate to its roots, credential activation)
 * and `admit` accepts the proven machine (for example: registered as a control-plane node).
 */
export interface ServiceCheck {
  verifier: AttestationVerifier;
  admit(identity: VerifiedTpmIdentity, result: ValidationResult): Promise<void>;
}

/** The service failed the node's check; the answer was not opened. */
export class ServiceAttestationError extends Error {
  override readonly name = 'ServiceAttestationError';
}

type Stream = grpc.ClientDuplexStream<ChallengeClientMessage, ChallengeServerMessage>;

/**
 * Runs the node side of a challenge stream: hello, wait for the nonce, attest the ephemeral key
 * and the request, and open the sealed answer. Rejects with the service's gRPC error (code and
 * message intact) or an AtlsError. The caller bounds the whole call with a gRPC deadline.
 */
export async function requestWithAttestation(
  stream: Stream,
  issuer: Issuer,
  request: Uint8Array,
  serviceCheck?: ServiceCheck,
): Promise<Buffer> {
  const reader = new StreamReader(stream);
  try {
    const rooted = issuer.rooted;
    const serviceNonce = serviceCheck === undefined ? Buffer.alloc(0) : randomBytes(32);
    stream.write({
      step: {
        $case: 'hello',
        value: {
          attestationVariant: issuer.variant.name,
          protocolVersion: CHALLENGE_PROTOCOL_VERSION,
          akPublic: rooted?.akPublic ?? Buffer.alloc(0),
          serviceNonce,
          ...(rooted === undefined ? {} : { identity: rooted.identity }),
        },
      },
    });
    const challenge = await reader.challenge();
    if (challenge.nonce.length !== 32)
      throw new AtlsError(`service sent a ${challenge.nonce.length}-byte nonce, expected 32`);
    // The service's host is checked first, but a refusal is held back until the service answered:
    // a genuine service that refuses this node (a modified image, say) then says why, and a service
    // that failed the check gets this node's attestation, which is public and bound to its nonce,
    // but its answer is never opened.
    let service: Awaited<ReturnType<typeof checkService>> | undefined;
    let serviceFailure: ServiceAttestationError | undefined;
    if (serviceCheck !== undefined) {
      try {
        service = await checkService(challenge, serviceNonce, serviceCheck);
      } catch (err) {
        if (!(err instanceof ServiceAttestationError)) throw err;
        serviceFailure = err;
      }
    }
    let proof: Buffer = Buffer.alloc(0);
    if (rooted !== undefined) {
      if (challenge.credential === undefined)
        throw new AtlsError('service sent no credential for the attestation key; it cannot verify this TPM');
      const secret = await rooted.activate(challenge.credential);
      proof = activationProof('join', secret, challenge.nonce, rooted.akName);
    }
    const key = ephemeralKey();
    const attestation = await issuer.issue(challengeUserData(key.publicKey, request), challenge.nonce);
    stream.write({
      step: {
        $case: 'attested',
        value: {
          attestation,
          ephemeralPublicKey: key.publicKey,
          request: Buffer.from(request),
          activationProof: proof,
          ...(service === undefined ? {} : { serviceCredential: service.pending.credential }),
        },
      },
    });
    const sealed = await reader.sealed();
    if (serviceFailure !== undefined) throw serviceFailure;
    if (service !== undefined && serviceCheck !== undefined) {
      // Nothing is opened, let alone used, before the service's host proved who it is.
      if (!sealed.servicePublicKey.equals(challenge.servicePublicKey))
        throw new ServiceAttestationError('the service sealed its answer with another key than the one it attested');
      let identity: VerifiedTpmIdentity;
      try {
        identity = service.pending.prove(sealed.serviceActivationProof, serviceNonce, 'host');
      } catch (err) {
        throw new ServiceAttestationError(`the service failed attestation: ${errorMessage(err)}`, { cause: err });
      }
      try {
        await serviceCheck.admit(identity, service.result);
      } catch (err) {
        throw new ServiceAttestationError(`the service is not trusted: ${errorMessage(err)}`, { cause: err });
      }
    }
    return open(sealed, key, challenge.nonce);
  } finally {
    stream.end();
    reader.dispose();
  }
}

/** Validates the service host's attestation in the challenge and prepares a credential for its AK. */
async function checkService(
  challenge: AttestationChallenge,
  serviceNonce: Buffer,
  check: ServiceCheck,
): Promise<{
  result: ValidationResult;
  pending: PendingActivation;
}> {
  if (challenge.serviceAttestation.length === 0) {
    throw new ServiceAttestationError(
      'the service did not attest its host: this node joins only through a JoinService on an attested control-plane node',
    );
  }
  const identity = check.verifier.identity;
  if (identity === undefined) throw new RangeError('a service check needs a rooted attestation verifier');
  try {
    const result = check.verifier.validator.validate(
      challenge.serviceAttestation,
      serviceNonce,
      serviceUserData(challenge.servicePublicKey),
    );
    return { result, pending: await identity.challenge(result.identityClaim, result.akPublic) };
  } catch (err) {
    if (err instanceof AttestationError)
      throw new ServiceAttestationError(`the service failed attestation: ${err.message}`, { cause: err });
    throw err;
  }
}

/** Turns stream events into awaitable "next message of this kind". */
class StreamReader {
  private readonly queue: ChallengeServerMessage[] = [];
  private error: Error | undefined;
  private ended = false;
  private wake: (() => void) | undefined;
  private readonly stream: Stream;

  constructor(stream: Stream) {
    this.stream = stream;
    stream.on('data', this.onData);
    stream.on('error', this.onError);
    stream.on('end', this.onEnd);
  }

  async challenge(): Promise<AttestationChallenge> {
    const step = await this.next('challenge');
    if (step.$case !== 'challenge') throw new AtlsError(`service sent ${step.$case}, expected challenge`);
    return step.value;
  }

  async sealed(): Promise<SealedResponse> {
    const step = await this.next('sealed');
    if (step.$case !== 'sealed') throw new AtlsError(`service sent ${step.$case}, expected sealed`);
    return step.value;
  }

  private async next(kind: string): Promise<NonNullable<ChallengeServerMessage['step']>> {
    for (;;) {
      const message = this.queue.shift();
      if (message !== undefined) {
        if (message.step === undefined) throw new AtlsError(`service sent an empty message, expected ${kind}`);
        return message.step;
      }
      if (this.error !== undefined) throw this.error;
      if (this.ended) throw new AtlsError(`service closed the stream before sending the ${kind}`);
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  dispose(): void {
    this.stream.off('data', this.onData);
    this.stream.off('error', this.onError);
    this.stream.off('end', this.onEnd);
    this.stream.on('error', () => undefined); // late errors after we are done are not interesting
  }

  private readonly onData = (message: ChallengeServerMessage): void => {
    this.queue.push(message);
    this.notify();
  };
  private readonly onError = (err: Error): void => {
    this.error = err;
    this.notify();
  };
  private readonly onEnd = (): void => {
    this.ended = true;
    this.notify();
  };
  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}
