import { randomBytes } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { AttestationError, MAX_DOCUMENT_BYTES } from '@constellation/attestation';
import type {
  EkIdentityVerifier,
  PendingActivation,
  ValidationResult,
  Validator,
  VerifiedTpmIdentity,
} from '@constellation/attestation';
import { noopLogger } from '@constellation/logger';
import type { Logger } from '@constellation/logger';
import { challengeUserData } from './challenge-binding.js';
import { CHALLENGE_PROTOCOL_VERSION } from './challenge-messages.js';
import type { ChallengeClientMessage, ChallengeServerMessage } from './challenge-messages.js';
import { ephemeralKey, seal } from './seal.js';
import { ServiceAttesterBusyError, serviceUserData } from './service-attester.js';
import type { ServiceAttester } from './service-attester.js';
import { retryAfterMetadata, statusErrorOf } from '@constellation/proto';
import { errorMessage } from '@constellation/errors';

/** Why a challenge exchange ended without an answer; stable strings for metrics. */
export type ChallengeRejection =
  'protocol' | 'variant' | 'expired' | 'oversized' | 'handler' | `attestation:${AttestationError['reason']}`;

export interface ChallengeServerOptions {
  /** One validator per accepted variant. */
  validators: readonly Validator[];
  /**
   * Proves the identity of nodes that attest with a rooted variant (EK certificate path, then
   * credential activation). Required when any validator's variant is rooted.
   */
  identity?: EkIdentityVerifier;
  /**
   * Attests the machine this service runs on when a node asks for it (hello.service_nonce), and
   * answers the node's credential for that machine's AK. Without it, nodes that require an
   * attested service refuse this one.
   */
  serviceAttester?: ServiceAttester;
  /**
   * What the attested node asked for, with what its attestation established (and, for rooted
   * variants, the proven TPM identity); returns the plaintext answer.
   */
  handle: (
    request: Buffer,
    attestation: ValidationResult,
    identity: VerifiedTpmIdentity | undefined,
  ) => Promise<Buffer>;
  /** How long the node has to answer the challenge. */
  challengeTtlMs?: number;
  /** How long the node has to send its hello after opening the stream. */
  helloTimeoutMs?: number;
  /** Largest accepted service request. */
  maxRequestBytes?: number;
  logger?: Logger;
  /** Called once per refused exchange, e.g. to count failures by reason. */
  onRejected?: (reason: ChallengeRejection, message: string) => void;
}

type Stream = grpc.ServerDuplexStream<ChallengeClientMessage, ChallengeServerMessage>;

/**
 * Runs the service side of one challenge stream: hello → fresh nonce → attested request →
 * validate (nonce, measurements, binding of ephemeral key and request) → handler → sealed answer.
 * The nonce lives only in this stream and is consumed by the first answer; a late answer,
 * a second answer, or an answer for another nonce gets nothing.
 */
export function serveChallenge(call: Stream, options: ChallengeServerOptions): void {
  if (options.validators.some((v) => v.variant.rooted) && options.identity === undefined)
    throw new RangeError('a rooted attestation variant needs an EK identity verifier');
  const log = (options.logger ?? noopLogger).child({ component: 'atls-challenge', peer: call.getPeer() });
  const ttl = options.challengeTtlMs ?? 10_000;
  const maxRequest = options.maxRequestBytes ?? 64 * 1024;
  let state: 'hello' | 'preparing' | 'answer' | 'working' | 'done' = 'hello';
  let service: { nonce: Buffer; key: ReturnType<typeof ephemeralKey> } | undefined;
  let nonce: Buffer | undefined;
  let validator: Validator | undefined;
  let activation: PendingActivation | undefined;
  let challengedAt = 0;

  const finish = (code: grpc.status, message: string, reason: ChallengeRejection, metadata?: grpc.Metadata): void => {
    if (state === 'done') return;
    state = 'done';
    clearTimeout(timer);
    options.onRejected?.(reason, message);
    log.info('challenge refused', { reason, code: grpc.status[code], error: message });
    const status: Partial<grpc.StatusObject> = { code, details: message };
    if (metadata !== undefined) status.metadata = metadata;
    call.emit('error', status);
  };

  let timer = setTimeout(() => {
    finish(grpc.status.DEADLINE_EXCEEDED, `no hello within ${options.helloTimeoutMs ?? 10_000} ms`, 'expired');
  }, options.helloTimeoutMs ?? 10_000);

  call.on('error', () => {
    // The client went away; nothing to answer.
    state = 'done';
    clearTimeout(timer);
  });
  call.on('end', () => {
    if (state !== 'done' && state !== 'working')
      finish(grpc.status.CANCELLED, 'stream ended before the exchange finished', 'protocol');
  });

  call.on('data', (message: ChallengeClientMessage) => {
    const step = message.step;
    if (state === 'hello') {
      if (step?.$case !== 'hello') {
        finish(
          grpc.status.INVALID_ARGUMENT,
          'the first message must be a hello announcing the attestation variant',
          'protocol',
        );
        return;
      }
      if (step.value.protocolVersion !== CHALLENGE_PROTOCOL_VERSION) {
        finish(
          grpc.status.FAILED_PRECONDITION,
          `challenge protocol version ${step.value.protocolVersion} is not supported; this service speaks ${CHALLENGE_PROTOCOL_VERSION}`,
          'protocol',
        );
        return;
      }
      validator = options.validators.find((v) => v.variant.name === step.value.attestationVariant);
      if (validator === undefined) {
        const accepted = options.validators.map((v) => v.variant.name).join(', ');
        finish(
          grpc.status.PERMISSION_DENIED,
          `attestation variant "${step.value.attestationVariant}" is not accepted; this service accepts: ${accepted}`,
          'variant',
        );
        return;
      }
      const hello = step.value;
      if (hello.serviceNonce.length !== 0 && hello.serviceNonce.length !== 32) {
        finish(grpc.status.INVALID_ARGUMENT, 'service_nonce must be empty or 32 bytes', 'protocol');
        return;
      }
      const rootedValidator = validator.variant.rooted && options.identity !== undefined;
      const attester = hello.serviceNonce.length === 32 ? options.serviceAttester : undefined;
      // Who the node is comes first (the EK certificate path and a credential for its AK), and,
      // when asked, an attestation of this service's own host. Both are asynchronous, so the
      // stream waits in 'preparing' meanwhile.
      state = 'preparing';
      const serviceKey = ephemeralKey();
      // The node's identity first: a stranger without a valid EK certificate costs the host's
      // TPM nothing (red-team finding). Then, when asked, the host attests (bounded by the attester).
      const prepare = async (): Promise<[PendingActivation | undefined, Buffer | undefined]> => {
        const pending = rootedValidator ? await options.identity?.challenge(hello.identity, hello.akPublic) : undefined;
        if (attester === undefined) return [pending, undefined];
        if (state !== 'preparing') return [pending, undefined];
        return [pending, await attester.attest(serviceUserData(serviceKey.publicKey), hello.serviceNonce)];
      };
      prepare().then(
        ([pending, serviceAttestation]) => {
          if (state !== 'preparing') return;
          activation = pending;
          if (serviceAttestation !== undefined) service = { nonce: Buffer.from(hello.serviceNonce), key: serviceKey };
          nonce = randomBytes(32);
          challengedAt = Date.now();
          state = 'answer';
          clearTimeout(timer);
          timer = setTimeout(() => {
            finish(grpc.status.DEADLINE_EXCEEDED, `no answer to the challenge within ${ttl} ms`, 'expired');
          }, ttl);
          const credential = activation?.credential;
          call.write({
            step: {
              $case: 'challenge',
              value: {
                nonce,
                expiresInMs: ttl,
                serviceAttestation: serviceAttestation ?? Buffer.alloc(0),
                servicePublicKey: serviceAttestation === undefined ? Buffer.alloc(0) : serviceKey.publicKey,
                ...(credential === undefined ? {} : { credential }),
              },
            },
          });
        },
        (err: unknown) => {
          if (err instanceof AttestationError) {
            finish(grpc.status.PERMISSION_DENIED, `attestation rejected: ${err.message}`, `attestation:${err.reason}`);
          } else if (err instanceof ServiceAttesterBusyError) {
            finish(grpc.status.UNAVAILABLE, err.message, 'handler', retryAfterMetadata(1_000));
          } else {
            log.error('could not prepare the challenge', { err });
            finish(
              grpc.status.UNAVAILABLE,
              "the service could not check the node's identity or attest its own host; retry",
              'handler',
              retryAfterMetadata(2_000),
            );
          }
        },
      );
      return;
    }
    if (state === 'preparing') {
      finish(grpc.status.INVALID_ARGUMENT, 'unexpected message: the challenge has not been sent yet', 'protocol');
      return;
    }
    if (state !== 'answer' || nonce === undefined || validator === undefined) {
      finish(grpc.status.INVALID_ARGUMENT, 'unexpected message: the challenge was already answered', 'protocol');
      return;
    }
    if (step?.$case !== 'attested') {
      finish(grpc.status.INVALID_ARGUMENT, 'expected the attested answer to the challenge', 'protocol');
      return;
    }
    const elapsed = Date.now() - challengedAt;
    if (elapsed > ttl) {
      finish(
        grpc.status.DEADLINE_EXCEEDED,
        `challenge answered after ${elapsed} ms; the limit is ${ttl} ms`,
        'expired',
      );
      return;
    }
    const { attestation, ephemeralPublicKey, request, activationProof, serviceCredential } = step.value;
    if (attestation.length > MAX_DOCUMENT_BYTES || request.length > maxRequest) {
      finish(
        grpc.status.INVALID_ARGUMENT,
        `attestation or request too large (limits ${MAX_DOCUMENT_BYTES} and ${maxRequest} bytes)`,
        'oversized',
      );
      return;
    }
    state = 'working'; // the nonce is consumed from here on
    clearTimeout(timer);
    let result: ValidationResult;
    let identity: VerifiedTpmIdentity | undefined;
    try {
      result = validator.validate(attestation, nonce, challengeUserData(ephemeralPublicKey, request));
      if (activation !== undefined) {
        if (result.attestationKeyName !== activation.akName.toString('hex')) {
          throw new AttestationError(
            'identity',
            'the quotes are signed by another attestation key than the one the hello announced',
          );
        }
        identity = activation.prove(activationProof, nonce);
      }
    } catch (err) {
      state = 'answer';
      if (err instanceof AttestationError) {
        const reason: ChallengeRejection = `attestation:${err.reason}`;
        finish(grpc.status.PERMISSION_DENIED, `attestation rejected: ${err.message}`, reason);
        return;
      }
      finish(grpc.status.INTERNAL, 'attestation could not be checked', 'handler');
      log.error('validator failed', { err });
      return;
    }
    for (const warning of result.warnings) {
      log.warn('accepted node with a warnOnly PCR mismatch', {
        pcr: warning.pcr,
        expected: warning.expected,
        actual: warning.actual,
      });
    }
    const currentNonce = nonce;
    const currentService = service;
    const attester = options.serviceAttester;
    options.handle(Buffer.from(request), result, identity).then(
      async (answer) => {
        if (state === 'done') return;
        let serviceActivationProof: Buffer = Buffer.alloc(0);
        if (currentService !== undefined && serviceCredential !== undefined && attester !== undefined) {
          try {
            serviceActivationProof = await attester.prove(serviceCredential, currentService.nonce);
          } catch (err) {
            log.error("could not prove this service's host identity", { err });
            state = 'answer';
            finish(grpc.status.INTERNAL, "the service could not prove its host's TPM identity", 'handler');
            return;
          }
        }
        let sealed;
        try {
          sealed = seal(answer, ephemeralPublicKey, currentNonce, currentService?.key);
        } catch (err) {
          state = 'answer';
          finish(grpc.status.INVALID_ARGUMENT, errorMessage(err), 'protocol');
          return;
        }
        state = 'done';
        call.write({ step: { $case: 'sealed', value: { ...sealed, serviceActivationProof } } });
        call.end();
      },
      (err: unknown) => {
        state = 'answer';
        // The edge: refusals by the handler's domain code become statuses here.
        const status = statusErrorOf(err);
        if (status !== undefined) {
          finish(status.code, status.message, 'handler', status.metadata);
        } else {
          log.error('request handler failed', { err });
          finish(grpc.status.INTERNAL, 'the service failed to process the request', 'handler');
        }
      },
    );
  });
}
