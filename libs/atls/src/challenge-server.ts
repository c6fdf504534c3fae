import { createHash, randomBytes } from 'node:crypto';
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
import type { OutstandingChallenges, TpmPlace } from './outstanding-challenges.js';
import type { UnansweredChallenges } from './unanswered-challenges.js';
import { peerSource } from './peer-source.js';
import { ServiceAttesterBusyError, serviceUserData } from './service-attester.js';
import type { ServiceAttester } from './service-attester.js';
import { retryAfterMetadata, statusErrorOf } from '@constellation/proto';
import type { StatusError } from '@constellation/proto';
import { Refusal, errorMessage } from '@constellation/errors';

/** Why a challenge exchange ended without an answer; stable strings for metrics. */
export type ChallengeRejection =
  | 'protocol'
  | 'variant'
  | 'expired'
  | 'oversized'
  | 'handler'
  /** Refused by `admit` (the service's load shedding): logged at debug only, see `admit`. */
  | 'admission'
  | 'outstanding'
  | 'call-in-progress'
  /** The call's network source holds its bound of slots with unanswered challenges (see UnansweredChallenges). */
  | 'unanswered'
  | `attestation:${AttestationError['reason']}`;

export interface ChallengeServerOptions {
  /** One validator per accepted variant. */
  validators: readonly Validator[];
  /**
   * Proves the identity of nodes that attest with a rooted variant (EK certificate path, then
   * credential activation). Required when any validator's variant is rooted.
   */
  identity?: EkIdentityVerifier;
  /**
   * Rooted variants: vets the TPM an EK certificate names (by its EK hash, once the certificate
   * path verified) before it is challenged, for example against the platform's registry; throws a
   * Refusal to refuse the call. A genuine TPM nobody registered then holds no slot for the
   * challenge's time bound while its sender stays silent. Its refusals end as 'handler' ones.
   */
  vetIdentity?: (ekPublicKeyHash: string) => Promise<void>;
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
  /**
   * Called once a well-formed hello arrived (protocol version, accepted variant), before the
   * expensive part: the identity check, the host's attestation and the quote. Returns what frees
   * the resources it took, called when the exchange ends; throws a Refusal (or StatusError) to
   * refuse the call, for example when the service is busy. A stream that never sends a hello
   * therefore takes nothing. A promise makes the call wait (for a slot, say) before the
   * challenge; the hello's time bound stops while it waits, and starts again once admitted.
   * Its refusals end as 'admission' ones and are logged at debug only: a storm sheds hundreds of
   * calls a second, so the admitter says what it sheds itself.
   */
  admit?: () => (() => void) | Promise<() => void>;
  /**
   * With it, the slot `admit` gives is held only while the service prepares the challenge: from
   * the challenge on, the call holds none (waiting for a node's answer costs the service nothing
   * but the call's memory), and once its node answers, this gives it a slot again, ahead of calls
   * still in line, for checking the answer and the handler. Without it a call that never answered
   * held its slot for the challenge's whole time bound, and strangers replaying public hellos from
   * enough addresses held every slot (issue 50). Same contract as `admit`.
   */
  admitAnswer?: () => (() => void) | Promise<() => void>;
  /**
   * Shared by the service's calls (rooted variants): at most one call in line or served per TPM a
   * hello names and network source, one slot for all of a TPM's calls, and one challenge
   * outstanding per proven TPM and source. Without it, one replayed hello can fill the line and
   * one genuine TPM can hold as many challenges as the service has slots.
   */
  outstanding?: OutstandingChallenges;
  /**
   * Shared by the service's calls (with `admit`): how many of its slots a network source may hold
   * with calls that have not answered their challenge. Without it, a stranger replaying distinct
   * genuine nodes' hellos from one address held every slot.
   */
  unanswered?: UnansweredChallenges;
}

/** This service's host attestation for a node that asked, and the ephemeral key it binds. */
interface HostProof {
  key: ReturnType<typeof ephemeralKey>;
  attestation: Buffer;
}

/** A refusal from `vetIdentity`, told apart from the service's own refusals while preparing. */
class VettingRefusal extends Error {
  constructor(readonly status: StatusError) {
    super(status.message);
  }
}

/**
 * The longest a TPM's place is held should its release be missed: beyond any call's bounds (the
 * wait for a slot, the hello's and the challenge's time bounds, the handler's API calls).
 */
const PLACE_MAX_MS = 120_000;

type Stream = grpc.ServerDuplexStream<ChallengeClientMessage, ChallengeServerMessage>;
type Hello = Extract<NonNullable<ChallengeClientMessage['step']>, { $case: 'hello' }>['value'];
type Answer = Extract<NonNullable<ChallengeClientMessage['step']>, { $case: 'attested' }>['value'];

/**
 * Runs the service side of one challenge stream: hello → fresh nonce → attested request →
 * validate (nonce, measurements, binding of ephemeral key and request) → handler → sealed answer.
 * The nonce lives only in this stream and is consumed by the first answer; a late answer,
 * a second answer, or an answer for another nonce gets nothing.
 */
export function serveChallenge(call: Stream, options: ChallengeServerOptions): void {
  if (options.validators.some((v) => v.variant.rooted) && options.identity === undefined)
    throw new RangeError('a rooted attestation variant needs an EK identity verifier');
  new ChallengeSession(call, options).start();
}

/** One stream's exchange; `state` says which message may come next. */
class ChallengeSession {
  private readonly log: Logger;
  /** The network source the call counts as for the per-TPM rules (see OutstandingChallenges). */
  private readonly source: string;
  /** This call's place among its TPM's calls (rooted variants with `outstanding`). */
  private place: TpmPlace | undefined;
  private readonly ttl: number;
  private readonly maxRequest: number;
  private state: 'hello' | 'waiting' | 'preparing' | 'answer' | 'working' | 'done' = 'hello';
  private service: { nonce: Buffer; key: ReturnType<typeof ephemeralKey> } | undefined;
  private nonce: Buffer | undefined;
  private validator: Validator | undefined;
  private activation: PendingActivation | undefined;
  private challengedAt = 0;
  private timer: NodeJS.Timeout | undefined;
  /** Free what `admit` and the TPM's claim took; called once the exchange ends, however it ends. */
  private readonly releases: (() => void)[] = [];
  /** This call's count among its source's unanswered calls, freed once its answer arrives. */
  private unanswered: (() => void) | undefined;
  /** The slot `admit` gave this call, while it holds it itself (without a TPM place). */
  private slot: (() => void) | undefined;

  constructor(
    private readonly call: Stream,
    private readonly options: ChallengeServerOptions,
  ) {
    const peer = call.getPeer();
    this.log = (options.logger ?? noopLogger).child({ component: 'atls-challenge', peer });
    this.source = peerSource(peer);
    this.ttl = options.challengeTtlMs ?? 10_000;
    this.maxRequest = options.maxRequestBytes ?? 64 * 1024;
  }

  /** The hello's time bound (and the preparation's, which follows it). */
  private startTimer(): void {
    const helloTimeoutMs = this.options.helloTimeoutMs ?? 10_000;
    this.timer = setTimeout(() => {
      this.finish(grpc.status.DEADLINE_EXCEEDED, `no hello within ${helloTimeoutMs} ms`, 'expired');
    }, helloTimeoutMs);
  }

  start(): void {
    this.startTimer();
    this.call.on('error', () => {
      // The client went away; nothing to answer.
      this.state = 'done';
      clearTimeout(this.timer);
      this.releaseAll();
    });
    // A client's cancellation (RST_STREAM) comes as 'cancelled' alone. Handled here, not only by
    // the admitter: a call handed a slot in the same turn as it was cancelled kept the slot until
    // the challenge's time bound (red-team finding).
    this.call.on('cancelled', () => {
      this.state = 'done';
      clearTimeout(this.timer);
      this.releaseAll();
    });
    this.call.on('end', () => {
      if (this.state !== 'done' && this.state !== 'working')
        this.finish(grpc.status.CANCELLED, 'stream ended before the exchange finished', 'protocol');
    });
    this.call.on('data', (message: ChallengeClientMessage) => {
      this.onMessage(message);
    });
  }

  private finish(code: grpc.status, message: string, reason: ChallengeRejection, metadata?: grpc.Metadata): void {
    if (this.state === 'done') return;
    this.state = 'done';
    clearTimeout(this.timer);
    this.releaseAll();
    this.options.onRejected?.(reason, message);
    const fields = { reason, code: grpc.status[code], error: message };
    if (reason === 'admission') this.log.debug('challenge refused', fields);
    else this.log.info('challenge refused', fields);
    const status: Partial<grpc.StatusObject> = { code, details: message };
    if (metadata !== undefined) status.metadata = metadata;
    this.call.emit('error', status);
  }

  private onMessage(message: ChallengeClientMessage): void {
    const step = message.step;
    if (this.state === 'hello') {
      if (step?.$case !== 'hello') {
        this.finish(
          grpc.status.INVALID_ARGUMENT,
          'the first message must be a hello announcing the attestation variant',
          'protocol',
        );
        return;
      }
      this.onHello(step.value);
      return;
    }
    if (this.state === 'waiting' || this.state === 'preparing') {
      this.finish(grpc.status.INVALID_ARGUMENT, 'unexpected message: the challenge has not been sent yet', 'protocol');
      return;
    }
    if (this.state !== 'answer' || this.nonce === undefined || this.validator === undefined) {
      this.finish(grpc.status.INVALID_ARGUMENT, 'unexpected message: the challenge was already answered', 'protocol');
      return;
    }
    if (step?.$case !== 'attested') {
      this.finish(grpc.status.INVALID_ARGUMENT, 'expected the attested answer to the challenge', 'protocol');
      return;
    }
    this.onAnswer(step.value, this.nonce, this.validator);
  }

  /** Checks the hello, then prepares the challenge (identity first, then the host's attestation). */
  private onHello(hello: Hello): void {
    const { options } = this;
    if (hello.protocolVersion !== CHALLENGE_PROTOCOL_VERSION) {
      this.finish(
        grpc.status.FAILED_PRECONDITION,
        `challenge protocol version ${hello.protocolVersion} is not supported; this service speaks ${CHALLENGE_PROTOCOL_VERSION}`,
        'protocol',
      );
      return;
    }
    const validator = options.validators.find((v) => v.variant.name === hello.attestationVariant);
    this.validator = validator;
    if (validator === undefined) {
      const accepted = options.validators.map((v) => v.variant.name).join(', ');
      this.finish(
        grpc.status.PERMISSION_DENIED,
        `attestation variant "${hello.attestationVariant}" is not accepted; this service accepts: ${accepted}`,
        'variant',
      );
      return;
    }
    if (hello.serviceNonce.length !== 0 && hello.serviceNonce.length !== 32) {
      this.finish(grpc.status.INVALID_ARGUMENT, 'service_nonce must be empty or 32 bytes', 'protocol');
      return;
    }
    if (!this.holdPlace(hello, validator)) return;
    // Another call of this TPM holds a slot (a stranger replaying this node's hello, say): this
    // call shares it instead of waiting behind it.
    if (options.admit === undefined || this.place?.slotHeld() === true) {
      this.begin(hello, validator);
      return;
    }
    this.whenAdmitted(options.admit, 'waiting', (release, waited) => {
      this.keepSlot(release);
      // The hello's time bound stopped while the call waited in line.
      if (waited) this.startTimer();
      this.begin(hello, validator);
    });
  }

  /**
   * Asks `admit` for a slot; `admitted` runs once one is given, at once or after a wait in line
   * (`waited`). While it waits the call is in state `inLine`, and the wait has its own bound (the
   * admitter's), not the hello's or the challenge's; a call that ended meanwhile gives the slot
   * straight back. A refusal ends the call.
   */
  private whenAdmitted(
    admit: () => (() => void) | Promise<() => void>,
    inLine: 'waiting' | 'working',
    admitted: (release: () => void, waited: boolean) => void,
  ): void {
    let slot: (() => void) | Promise<() => void>;
    try {
      slot = admit();
    } catch (err) {
      this.refuseAdmission(err);
      return;
    }
    if (typeof slot === 'function') {
      admitted(slot, false);
      return;
    }
    this.state = inLine;
    clearTimeout(this.timer);
    slot.then(
      (release) => {
        if (this.state !== inLine) {
          release(); // the caller went away while waiting
          return;
        }
        admitted(release, true);
      },
      (err: unknown) => {
        if (this.state === inLine) this.refuseAdmission(err);
      },
    );
  }

  /**
   * A slot this call was admitted to: its TPM's calls share it (see OutstandingChallenges).
   */
  private keepSlot(release: () => void): void {
    if (this.place !== undefined) {
      this.place.adopt(release);
      return;
    }
    this.slot = release;
    this.releases.push(() => {
      this.yieldSlot();
    });
  }

  /** Gives back the slot `admit` gave (its TPM's, when the TPM's calls share one). */
  private yieldSlot(): void {
    this.place?.yieldSlot();
    const slot = this.slot;
    this.slot = undefined;
    slot?.();
  }

  /**
   * For rooted variants: the TPM the hello names gets one call in line or served per network
   * source (see OutstandingChallenges.hold). False when refused (the call is finished).
   */
  private holdPlace(hello: Hello, validator: Validator): boolean {
    const certificate = hello.identity?.ekCertificate;
    const { outstanding } = this.options;
    if (!validator.variant.rooted || outstanding === undefined || certificate === undefined) return true;
    if (certificate.length === 0) return true; // refused by the identity check, with its reason
    try {
      const digest = createHash('sha256').update(certificate).digest('hex');
      const place = outstanding.hold(digest, this.source, PLACE_MAX_MS);
      this.place = place;
      this.releases.push(() => {
        place.leave();
      });
      return true;
    } catch (err) {
      const status = statusErrorOf(err);
      if (status === undefined) throw err;
      this.finish(status.code, status.message, 'call-in-progress', status.metadata);
      return false;
    }
  }

  /**
   * The call counts among its source's unanswered calls until its answer arrives (from the moment
   * its TPM is vouched for). False when refused: the call is finished, and its slot goes back.
   */
  private countUnanswered(): boolean {
    const { unanswered } = this.options;
    if (unanswered === undefined) return true;
    try {
      const release = unanswered.take(this.source);
      this.unanswered = release;
      this.releases.push(release);
      return true;
    } catch (err) {
      const status = statusErrorOf(err);
      if (status === undefined) throw err;
      this.finish(status.code, status.message, 'unanswered', status.metadata);
      return false;
    }
  }

  private releaseAll(): void {
    for (let release = this.releases.pop(); release !== undefined; release = this.releases.pop()) release();
  }

  /** An admission refusal (a Refusal or StatusError) becomes the call's status. */
  private refuseAdmission(err: unknown): void {
    const status = statusErrorOf(err);
    if (status === undefined) throw err;
    this.finish(status.code, status.message, 'admission', status.metadata);
  }

  /**
   * Prepares the challenge: who the node is (the EK certificate path and a credential for its AK),
   * and, when asked, an attestation of this service's own host. Both are asynchronous, so the
   * stream waits in 'preparing' meanwhile.
   */
  private begin(hello: Hello, validator: Validator): void {
    this.state = 'preparing';
    this.prepare(hello, validator).then(
      ([pending, hostProof]) => {
        this.sendChallenge(hello, pending, hostProof);
      },
      (err: unknown) => {
        this.preparationFailed(err);
      },
    );
  }

  /**
   * The node's identity first: a stranger without a valid EK certificate costs the host's TPM
   * nothing (red-team finding). Then, when asked, the host attests (bounded by the attester).
   */
  private async prepare(
    hello: Hello,
    validator: Validator,
  ): Promise<[PendingActivation | undefined, HostProof | undefined]> {
    const rooted = validator.variant.rooted && this.options.identity !== undefined;
    const attester = hello.serviceNonce.length === 32 ? this.options.serviceAttester : undefined;
    const pending = rooted ? await this.options.identity?.challenge(hello.identity, hello.akPublic) : undefined;
    // Claimed before the host attests: a refused duplicate costs the host's TPM nothing.
    if (pending !== undefined && this.options.outstanding !== undefined && this.state === 'preparing')
      this.releases.push(this.options.outstanding.claim(pending.ekPublicKeyHash, this.source, this.ttl));
    // Then the platform's word on the TPM: an unknown one is refused before it holds a challenge.
    if (pending !== undefined && this.options.vetIdentity !== undefined) {
      try {
        await this.options.vetIdentity(pending.ekPublicKeyHash);
      } catch (err) {
        const status = statusErrorOf(err);
        throw status === undefined ? err : new VettingRefusal(status);
      }
    }
    // From here the call counts among its source's unanswered challenges: its TPM is one the
    // platform knows (a hello naming an unknown TPM was refused above, with its own reason, and
    // counted for nothing); over the source's bound it is refused before the host attests.
    if (this.state !== 'preparing' || !this.countUnanswered()) return [pending, undefined];
    if (attester === undefined) return [pending, undefined];
    // The key the attestation binds; made only for a node that asked (it is a tenth of a
    // millisecond of the service's CPU per call otherwise wasted).
    const key = ephemeralKey();
    return [pending, { key, attestation: await attester.attest(serviceUserData(key.publicKey), hello.serviceNonce) }];
  }

  private sendChallenge(hello: Hello, pending: PendingActivation | undefined, hostProof: HostProof | undefined): void {
    if (this.state !== 'preparing') return;
    this.activation = pending;
    if (hostProof !== undefined) this.service = { nonce: Buffer.from(hello.serviceNonce), key: hostProof.key };
    const nonce = randomBytes(32);
    this.nonce = nonce;
    this.challengedAt = Date.now();
    this.state = 'answer';
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.finish(grpc.status.DEADLINE_EXCEEDED, `no answer to the challenge within ${this.ttl} ms`, 'expired');
    }, this.ttl);
    const credential = pending?.credential;
    // Waiting for the node's answer takes none of the service's work: the slot goes to the next call.
    if (this.options.admitAnswer !== undefined) this.yieldSlot();
    this.call.write({
      step: {
        $case: 'challenge',
        value: {
          nonce,
          expiresInMs: this.ttl,
          serviceAttestation: hostProof?.attestation ?? Buffer.alloc(0),
          servicePublicKey: hostProof?.key.publicKey ?? Buffer.alloc(0),
          ...(credential === undefined ? {} : { credential }),
        },
      },
    });
  }

  private preparationFailed(err: unknown): void {
    if (err instanceof AttestationError) {
      this.finish(grpc.status.PERMISSION_DENIED, `attestation rejected: ${err.message}`, `attestation:${err.reason}`);
    } else if (err instanceof ServiceAttesterBusyError) {
      this.finish(grpc.status.UNAVAILABLE, err.message, 'handler', retryAfterMetadata(1_000));
    } else if (err instanceof VettingRefusal) {
      this.finish(err.status.code, err.status.message, 'handler', err.status.metadata);
    } else if (err instanceof Refusal) {
      // OutstandingChallenges: this TPM has a challenge on another call.
      const status = statusErrorOf(err);
      this.finish(status.code, err.message, 'outstanding', status.metadata);
    } else {
      this.log.error('could not prepare the challenge', { err });
      this.finish(
        grpc.status.UNAVAILABLE,
        "the service could not check the node's identity or attest its own host; retry",
        'handler',
        retryAfterMetadata(2_000),
      );
    }
  }

  /** The attested answer: in time, within bounds, valid for this nonce; then the handler. */
  private onAnswer(answer: Answer, nonce: Buffer, validator: Validator): void {
    const elapsed = Date.now() - this.challengedAt;
    if (elapsed > this.ttl) {
      this.finish(
        grpc.status.DEADLINE_EXCEEDED,
        `challenge answered after ${elapsed} ms; the limit is ${this.ttl} ms`,
        'expired',
      );
      return;
    }
    const { attestation, request } = answer;
    if (attestation.length > MAX_DOCUMENT_BYTES || request.length > this.maxRequest) {
      this.finish(
        grpc.status.INVALID_ARGUMENT,
        `attestation or request too large (limits ${MAX_DOCUMENT_BYTES} and ${this.maxRequest} bytes)`,
        'oversized',
      );
      return;
    }
    this.state = 'working'; // the nonce is consumed from here on
    clearTimeout(this.timer);
    // Answered: whatever the answer is worth, the call is no longer counted as silent.
    this.unanswered?.();
    const admitAnswer = this.options.admitAnswer;
    if (admitAnswer === undefined) {
      this.check(answer, nonce, validator);
      return;
    }
    this.whenAdmitted(admitAnswer, 'working', (release) => {
      this.releases.push(release);
      this.check(answer, nonce, validator);
    });
  }

  /** The answer's checks (quotes, activation proof), then the handler, then the sealed answer. */
  private check(answer: Answer, nonce: Buffer, validator: Validator): void {
    const validated = this.validate(answer, nonce, validator);
    if (validated === undefined) return;
    for (const warning of validated.result.warnings) {
      this.log.warn('accepted node with a warnOnly PCR mismatch', {
        pcr: warning.pcr,
        expected: warning.expected,
        actual: warning.actual,
      });
    }
    this.options.handle(Buffer.from(answer.request), validated.result, validated.identity).then(
      async (plaintext) => {
        await this.respond(plaintext, answer, nonce);
      },
      (err: unknown) => {
        this.state = 'answer';
        // The edge: refusals by the handler's domain code become statuses here.
        const status = statusErrorOf(err);
        if (status !== undefined) {
          this.finish(status.code, status.message, 'handler', status.metadata);
        } else {
          this.log.error('request handler failed', { err });
          this.finish(grpc.status.INTERNAL, 'the service failed to process the request', 'handler');
        }
      },
    );
  }

  /**
   * The quotes for this nonce and request, and (rooted variants) the activation proof. A proof made
   * in another protocol is refused first, by name: that is how a genuine node's aTLS server, which
   * activates any credential for its connection's nonce, was made to answer a join challenge
   * (issue 42). Any other failed proof comes after the quotes, so that a replay is named as one.
   */
  private validate(
    answer: Answer,
    nonce: Buffer,
    validator: Validator,
  ): { result: ValidationResult; identity: VerifiedTpmIdentity | undefined } | undefined {
    try {
      let identity: VerifiedTpmIdentity | undefined;
      let activationFailure: Error | undefined;
      try {
        identity = this.activation?.prove(answer.activationProof, nonce, 'join');
      } catch (err) {
        if (err instanceof AttestationError && err.reason === 'activation-protocol') throw err;
        activationFailure = err instanceof Error ? err : new Error(String(err));
      }
      const result = validator.validate(
        answer.attestation,
        nonce,
        challengeUserData(answer.ephemeralPublicKey, answer.request),
      );
      if (this.activation !== undefined && result.attestationKeyName !== this.activation.akName.toString('hex')) {
        throw new AttestationError(
          'identity',
          'the quotes are signed by another attestation key than the one the hello announced',
        );
      }
      if (activationFailure !== undefined) throw activationFailure;
      return { result, identity };
    } catch (err) {
      this.state = 'answer';
      if (err instanceof AttestationError) {
        this.finish(grpc.status.PERMISSION_DENIED, `attestation rejected: ${err.message}`, `attestation:${err.reason}`);
        return undefined;
      }
      this.finish(grpc.status.INTERNAL, 'attestation could not be checked', 'handler');
      this.log.error('validator failed', { err });
      return undefined;
    }
  }

  /** Seals the handler's answer to the node's key (and proves the host, when the node asked). */
  private async respond(plaintext: Buffer, answer: Answer, nonce: Buffer): Promise<void> {
    if (this.state === 'done') return;
    const service = this.service;
    const attester = this.options.serviceAttester;
    let serviceActivationProof: Buffer = Buffer.alloc(0);
    if (service !== undefined && answer.serviceCredential !== undefined && attester !== undefined) {
      try {
        serviceActivationProof = await attester.prove(answer.serviceCredential, service.nonce);
      } catch (err) {
        this.log.error("could not prove this service's host identity", { err });
        this.state = 'answer';
        this.finish(grpc.status.INTERNAL, "the service could not prove its host's TPM identity", 'handler');
        return;
      }
    }
    let sealed;
    try {
      sealed = seal(plaintext, answer.ephemeralPublicKey, nonce, service?.key);
    } catch (err) {
      this.state = 'answer';
      this.finish(grpc.status.INVALID_ARGUMENT, errorMessage(err), 'protocol');
      return;
    }
    this.state = 'done';
    this.call.write({ step: { $case: 'sealed', value: { ...sealed, serviceActivationProof } } });
    this.call.end();
    this.releaseAll();
  }
}
