import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import * as grpc from '@grpc/grpc-js';
import {
  AttestationError,
  EkIdentityVerifier,
  TpmIssuer,
  TpmValidator,
  pemCertificatesToDer,
} from '@constellation/attestation';
import type { Measurements } from '@constellation/attestation';
import { SoftwareAttester } from '@constellation/attestation/testing';
import { JoinServiceClient, JoinServiceService } from '@constellation/proto';
import type {
  AttestedRequest,
  IssueJoinTicketRequest,
  IssueJoinTicketResponse,
  TpmIdentity,
} from '@constellation/proto';
import { startSwtpm, useTestEkCa, withTimeout } from '@constellation/testing';
import type { Swtpm } from '@constellation/testing';
import { SocketTransport, Tpm } from '@constellation/tpm';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { challengeUserData } from './challenge-binding.js';
import { CHALLENGE_PROTOCOL_VERSION } from './challenge-messages.js';
import type { ChallengeRejection } from './challenge-server.js';
import { serveChallenge } from './challenge-server.js';
import { AtlsError } from './errors.js';
import { NONCE_BYTES, nonceToServerName, serverNameToNonce } from './nonce-server-name.js';
import { ephemeralKey, open, seal } from './seal.js';
import { serviceChannelCredentials, serviceServerCredentials } from './service-tls.js';

// Property-based fuzzing (fast-check, fixed seeds, bounded runs) of the attestation challenge
// server and the aTLS helpers. A real serveChallenge server (qemu-vtpm and tpm2-ek with a real EK
// identity verifier) is driven over real TLS with random sequences of client messages: hellos
// and attested answers with random and mutated fields, in any order, repeated, with or without
// half-closing. The stream must always end with a client-error gRPC status (never INTERNAL or
// UNKNOWN), the handler must only ever see an intact attested answer, and nothing may crash.

// ---------------------------------------------------------------------------------------------
// Byte mutations (bit flips, truncations, insertions, deletions, overwritten bytes).

type Mutation =
  | { kind: 'flip'; at: number; bit: number }
  | { kind: 'truncate'; at: number }
  | { kind: 'insert'; at: number; bytes: Uint8Array }
  | { kind: 'delete'; at: number; count: number }
  | { kind: 'set'; at: number; value: number };

const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
  fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
  fc.record({
    kind: fc.constant('insert' as const),
    at: fc.nat(),
    bytes: fc.uint8Array({ minLength: 1, maxLength: 8 }),
  }),
  fc.record({ kind: fc.constant('delete' as const), at: fc.nat(), count: fc.integer({ min: 1, max: 8 }) }),
  fc.record({
    kind: fc.constant('set' as const),
    at: fc.nat(),
    value: fc.constantFrom(0, 1, 0x02, 0x04, 0x7f, 0x80, 0xff),
  }),
);
const mutationsArb = fc.array(mutationArb, { minLength: 1, maxLength: 3 });

function applyMutation(input: Buffer, m: Mutation): Buffer {
  const out = Buffer.from(input);
  if (out.length === 0) return m.kind === 'insert' ? Buffer.from(m.bytes) : out;
  const at = m.at % out.length;
  switch (m.kind) {
    case 'flip':
      out[at] = (out[at] ?? 0) ^ (1 << m.bit);
      return out;
    case 'truncate':
      return out.subarray(0, at);
    case 'insert':
      return Buffer.concat([out.subarray(0, at), m.bytes, out.subarray(at)]);
    case 'delete':
      return Buffer.concat([out.subarray(0, at), out.subarray(at + m.count)]);
    case 'set':
      out[at] = m.value;
      return out;
  }
}

function mutate(input: Uint8Array, mutations: readonly Mutation[]): Buffer {
  return mutations.reduce(applyMutation, Buffer.from(input));
}

// ---------------------------------------------------------------------------------------------
// A real challenge server.

const ZERO = Buffer.alloc(32);
const measurements: Measurements = new Map([
  [9, { expected: Buffer.alloc(32, 9), warnOnly: false }],
  [15, { expected: ZERO, warnOnly: false }],
]);
/** Knows the expected PCR values, has no TPM: qemu-vtpm accepts it, which makes genuine answers cheap. */
const attacker = new SoftwareAttester({ claims: measurements });
const REQUEST = Buffer.from('join request bytes');

const ca = useTestEkCa();
let swtpm: Swtpm;
let tpm: Tpm;
let server: grpc.Server;
let client: JoinServiceClient;
let port: number;
let genuineIdentity: TpmIdentity;
let genuineAkPublic: Buffer;
let verifier: EkIdentityVerifier;
const handled: Buffer[] = [];
const rejections: ChallengeRejection[] = [];

beforeAll(async () => {
  swtpm = await startSwtpm({ manufacture: { ca: ca() } });
  tpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port, keepConnection: true }));
  const intermediates = pemCertificatesToDer(await readFile(ca().intermediateCertPath, 'utf8'));
  const roots = pemCertificatesToDer(await readFile(ca().rootCertPath, 'utf8'));
  const rooted = (await TpmIssuer.rooted(tpm, { ekIntermediates: intermediates })).rooted;
  if (rooted === undefined) throw new Error('not a rooted issuer');
  genuineIdentity = rooted.identity;
  genuineAkPublic = Buffer.from(rooted.akPublic);
  verifier = new EkIdentityVerifier({ roots });
  server = new grpc.Server();
  server.addService(JoinServiceService, {
    issueJoinTicket: (call: grpc.ServerDuplexStream<IssueJoinTicketRequest, IssueJoinTicketResponse>) => {
      serveChallenge(call, {
        validators: [
          new TpmValidator({ variant: 'qemu-vtpm', measurements }),
          new TpmValidator({ variant: 'tpm2-ek', measurements }),
        ],
        identity: verifier,
        challengeTtlMs: 400,
        helloTimeoutMs: 300,
        maxRequestBytes: 4096,
        onRejected: (reason) => rejections.push(reason),
        handle: (request) => {
          handled.push(Buffer.from(request));
          return Promise.resolve(Buffer.from('ticket'));
        },
      });
    },
    issueRejoinTicket: (call: grpc.ServerDuplexStream<unknown, unknown>) => {
      call.emit('error', { code: grpc.status.UNIMPLEMENTED, details: 'not in this test' });
    },
  });
  port = await new Promise<number>((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', serviceServerCredentials(), (err, bound) => {
      if (err) reject(err);
      else resolve(bound);
    });
  });
  client = new JoinServiceClient(`127.0.0.1:${port}`, serviceChannelCredentials());
}, 60_000);

afterAll(async () => {
  (client as JoinServiceClient | undefined)?.close();
  (server as grpc.Server | undefined)?.forceShutdown();
  await (tpm as Tpm | undefined)?.close();
  await (swtpm as Swtpm | undefined)?.stop();
});

// ---------------------------------------------------------------------------------------------
// Client scripts.

const bytesArb = (sizes: number[]): fc.Arbitrary<Buffer> =>
  fc.oneof(
    fc.constantFrom(...sizes).map((n) => randomBytesFixed(n)),
    fc.uint8Array({ maxLength: 100 }).map((b) => Buffer.from(b)),
  );

/** Deterministic filler (fast-check must be able to replay a failing run). */
function randomBytesFixed(n: number): Buffer {
  return Buffer.from(Array.from({ length: n }, (_, i) => (i * 37 + n) & 0xff));
}

type IdentityChoice =
  | { kind: 'none' }
  | { kind: 'genuine' }
  | { kind: 'empty' }
  | { kind: 'mutated'; field: 'ekPublic' | 'ekCertificate' | 'intermediate'; mutations: Mutation[] }
  | { kind: 'many-intermediates' };

const identityArb: fc.Arbitrary<IdentityChoice> = fc.oneof(
  fc.constant({ kind: 'none' as const }),
  fc.constant({ kind: 'genuine' as const }),
  fc.constant({ kind: 'empty' as const }),
  fc.record({
    kind: fc.constant('mutated' as const),
    field: fc.constantFrom('ekPublic' as const, 'ekCertificate' as const, 'intermediate' as const),
    mutations: mutationsArb,
  }),
  fc.constant({ kind: 'many-intermediates' as const }),
);

interface HelloStep {
  kind: 'hello';
  variant: string;
  version: number;
  identity: IdentityChoice;
  akPublic: 'empty' | 'genuine' | { mutations: Mutation[] } | Buffer;
  serviceNonce: Buffer;
}

type AnswerField = 'attestation' | 'ephemeralPublicKey' | 'request' | 'activationProof' | 'serviceCredential';

interface AttestedStep {
  kind: 'attested';
  /** Wait for the challenge first (and answer its nonce), or send at once. */
  wait: boolean;
  /** Fields to mutate in an otherwise genuine answer; empty means an intact answer. */
  mutated: { field: AnswerField; mutations: Mutation[] }[];
  /** Replace the attestation document with random bytes. */
  randomAttestation: Uint8Array | null;
  /** Answer an old nonce instead of this stream's. */
  staleNonce: boolean;
}

type Step = HelloStep | AttestedStep | { kind: 'empty' } | { kind: 'pause'; ms: number };

const helloArb: fc.Arbitrary<HelloStep> = fc.record({
  kind: fc.constant('hello' as const),
  variant: fc.oneof(
    { arbitrary: fc.constantFrom('qemu-vtpm', 'tpm2-ek'), weight: 6 },
    { arbitrary: fc.constantFrom('dummy', '', 'QEMU-VTPM', 'tpm2-ek\u0000', 'azure-sev-snp'), weight: 1 },
    { arbitrary: fc.string({ maxLength: 20 }), weight: 1 },
  ),
  version: fc.oneof(
    { arbitrary: fc.constant(CHALLENGE_PROTOCOL_VERSION), weight: 6 },
    { arbitrary: fc.constantFrom(0, 1, CHALLENGE_PROTOCOL_VERSION + 1, 0xffffffff), weight: 1 },
  ),
  identity: identityArb,
  akPublic: fc.oneof(
    fc.constant('empty' as const),
    fc.constant('genuine' as const),
    fc.record({ mutations: mutationsArb }),
    bytesArb([0, 10, 90]),
  ),
  serviceNonce: fc.oneof(
    { arbitrary: fc.constant(Buffer.alloc(0)), weight: 6 },
    { arbitrary: bytesArb([31, 33, 32]), weight: 1 },
  ),
});

const attestedArb: fc.Arbitrary<AttestedStep> = fc.record({
  kind: fc.constant('attested' as const),
  wait: fc.boolean(),
  mutated: fc.array(
    fc.record({
      field: fc.constantFrom<AnswerField>(
        'attestation',
        'ephemeralPublicKey',
        'request',
        'activationProof',
        'serviceCredential',
      ),
      mutations: mutationsArb,
    }),
    { maxLength: 2 },
  ),
  randomAttestation: fc.option(fc.uint8Array({ maxLength: 200 }), { freq: 4 }),
  staleNonce: fc.oneof({ arbitrary: fc.constant(false), weight: 4 }, { arbitrary: fc.constant(true), weight: 1 }),
});

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { arbitrary: helloArb, weight: 4 },
  { arbitrary: attestedArb, weight: 4 },
  { arbitrary: fc.constant({ kind: 'empty' as const }), weight: 1 },
  { arbitrary: fc.integer({ min: 0, max: 30 }).map((ms) => ({ kind: 'pause' as const, ms })), weight: 1 },
);

const GENUINE_HELLO: HelloStep = {
  kind: 'hello',
  variant: 'qemu-vtpm',
  version: CHALLENGE_PROTOCOL_VERSION,
  identity: { kind: 'none' },
  akPublic: 'empty',
  serviceNonce: Buffer.alloc(0),
};

const scriptArb = fc.record({
  // Half the scripts start with a correct hello, so that the answers reach the validator.
  steps: fc
    .tuple(fc.boolean(), fc.array(stepArb, { minLength: 1, maxLength: 5 }))
    .map(([genuineStart, steps]) => (genuineStart ? [GENUINE_HELLO, ...steps] : steps)),
  // Most scripts half-close; the others wait for the server's timeouts.
  halfClose: fc.oneof({ arbitrary: fc.constant(true), weight: 5 }, { arbitrary: fc.constant(false), weight: 1 }),
});

function identityFor(choice: IdentityChoice): TpmIdentity | undefined {
  switch (choice.kind) {
    case 'none':
      return undefined;
    case 'genuine':
      return genuineIdentity;
    case 'empty':
      return { ekPublic: Buffer.alloc(0), ekCertificate: Buffer.alloc(0), ekIntermediates: [] };
    case 'many-intermediates':
      return {
        ...genuineIdentity,
        ekIntermediates: Array.from({ length: 5 }, () => genuineIdentity.ekIntermediates[0] ?? Buffer.alloc(0)),
      };
    case 'mutated': {
      const copy: TpmIdentity = {
        ekPublic: Buffer.from(genuineIdentity.ekPublic),
        ekCertificate: Buffer.from(genuineIdentity.ekCertificate),
        ekIntermediates: genuineIdentity.ekIntermediates.map((c) => Buffer.from(c)),
      };
      if (choice.field === 'ekPublic') copy.ekPublic = mutate(copy.ekPublic, choice.mutations);
      else if (choice.field === 'ekCertificate') copy.ekCertificate = mutate(copy.ekCertificate, choice.mutations);
      else copy.ekIntermediates = copy.ekIntermediates.map((c) => mutate(c, choice.mutations));
      return copy;
    }
  }
}

function helloMessage(step: HelloStep): IssueJoinTicketRequest {
  const identity = identityFor(step.identity);
  const akPublic =
    step.akPublic === 'empty'
      ? Buffer.alloc(0)
      : step.akPublic === 'genuine'
        ? genuineAkPublic
        : Buffer.isBuffer(step.akPublic)
          ? step.akPublic
          : mutate(genuineAkPublic, step.akPublic.mutations);
  return {
    step: {
      $case: 'hello',
      value: {
        attestationVariant: step.variant,
        protocolVersion: step.version,
        akPublic,
        serviceNonce: step.serviceNonce,
        ...(identity === undefined ? {} : { identity }),
      },
    },
  };
}

interface Outcome {
  status: grpc.StatusObject;
  sealed: number;
  /** Intact answers to this stream's nonce that were sent (the only ones the handler may see). */
  intactAnswers: number;
}

/** Runs one script against the server and returns how the stream ended. */
async function run(script: { steps: Step[]; halfClose: boolean }): Promise<Outcome> {
  const stream = client.issueJoinTicket({ deadline: Date.now() + 10_000 });
  const challenges: Buffer[] = [];
  let sealed = 0;
  let intactAnswers = 0;
  let wake: (() => void) | undefined;
  // Read through a function, so that TypeScript does not narrow it: the status event sets it meanwhile.
  const stream$ = { finished: false };
  const isFinished = (): boolean => stream$.finished;
  const status = new Promise<grpc.StatusObject>((resolve) => {
    stream.on('status', (s: grpc.StatusObject) => {
      stream$.finished = true;
      wake?.();
      resolve(s);
    });
  });
  stream.on('error', () => undefined); // the status event carries it
  stream.on('data', (m: IssueJoinTicketResponse) => {
    if (m.step?.$case === 'challenge') challenges.push(Buffer.from(m.step.value.nonce));
    if (m.step?.$case === 'sealed') sealed++;
    wake?.();
  });
  const waitForChallenge = async (): Promise<Buffer | undefined> => {
    const deadline = Date.now() + 2_000;
    while (challenges.length === 0 && !isFinished() && Date.now() < deadline) {
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, 50);
      });
    }
    return challenges.at(-1);
  };
  const staleNonce = randomBytesFixed(32);
  for (const step of script.steps) {
    if (isFinished()) break;
    if (step.kind === 'pause') {
      await new Promise((resolve) => setTimeout(resolve, step.ms));
    } else if (step.kind === 'empty') {
      stream.write({});
    } else if (step.kind === 'hello') {
      stream.write(helloMessage(step));
    } else {
      const nonce = step.wait ? await waitForChallenge() : challenges.at(-1);
      const key = ephemeralKey();
      const document = await attacker.issue(
        challengeUserData(key.publicKey, REQUEST),
        step.staleNonce || nonce === undefined ? staleNonce : nonce,
      );
      const answer: AttestedRequest = {
        attestation: document,
        ephemeralPublicKey: key.publicKey,
        request: REQUEST,
        activationProof: Buffer.alloc(0),
      };
      let intact = !step.staleNonce && nonce !== undefined;
      if (step.randomAttestation !== null) {
        answer.attestation = Buffer.from(step.randomAttestation);
        intact = false;
      }
      for (const { field, mutations } of step.mutated) {
        if (field === 'serviceCredential') {
          answer.serviceCredential = {
            credentialBlob: mutate(randomBytesFixed(40), mutations),
            encryptedSecret: randomBytesFixed(8),
          };
        } else {
          const before = Buffer.from(answer[field]);
          answer[field] = mutate(before, mutations);
          if (field !== 'activationProof' && !before.equals(answer[field])) intact = false;
        }
      }
      if (isFinished()) break;
      stream.write({ step: { $case: 'attested', value: answer } });
      if (intact) intactAnswers++;
    }
  }
  if (script.halfClose) stream.end();
  const final = await withTimeout(status, 5_000, 'challenge stream status');
  if (!script.halfClose) stream.end();
  return { status: final, sealed, intactAnswers };
}

/** What a client may be told when its messages were wrong, late, or cut short. */
const CLIENT_ERRORS = new Set([
  grpc.status.INVALID_ARGUMENT,
  grpc.status.PERMISSION_DENIED,
  grpc.status.FAILED_PRECONDITION,
  grpc.status.DEADLINE_EXCEEDED,
  grpc.status.CANCELLED,
]);

describe('challenge server under random client message sequences (fast-check, real streams)', () => {
  it('an intact answer gets its sealed ticket (the fuzzing harness reaches the handler)', async () => {
    handled.length = 0;
    const outcome = await run({
      steps: [
        {
          kind: 'hello',
          variant: 'qemu-vtpm',
          version: CHALLENGE_PROTOCOL_VERSION,
          identity: { kind: 'none' },
          akPublic: 'empty',
          serviceNonce: Buffer.alloc(0),
        },
        { kind: 'attested', wait: true, mutated: [], randomAttestation: null, staleNonce: false },
      ],
      halfClose: true,
    });
    expect(outcome.status.code).toBe(grpc.status.OK);
    expect(outcome.sealed).toBe(1);
    expect(handled).toEqual([REQUEST]);
  });

  it('every stream ends with a client-error status, and only intact answers reach the handler', async () => {
    const codes = new Set<string>();
    await fc.assert(
      fc.asyncProperty(scriptArb, async (script) => {
        handled.length = 0;
        const outcome = await run(script);
        const { code, details } = outcome.status;
        codes.add(grpc.status[code]);
        if (code === grpc.status.OK) {
          // Only an intact answer to this stream's nonce is ever answered, and only once.
          expect(outcome.intactAnswers).toBeGreaterThan(0);
          expect(outcome.sealed).toBe(1);
          expect(handled).toEqual([REQUEST]);
          return;
        }
        expect(CLIENT_ERRORS.has(code), `${grpc.status[code]}: ${details}`).toBe(true);
        expect(details.length).toBeGreaterThan(0);
        expect(outcome.sealed).toBe(0);
        expect(handled.length).toBeLessThanOrEqual(outcome.intactAnswers);
        for (const request of handled) expect(request).toEqual(REQUEST);
      }),
      { seed: 0xa71501, numRuns: 100 },
    );
    // The scripts reached refusals of every kind, not only the first-message check.
    expect([...codes]).toEqual(expect.arrayContaining(['INVALID_ARGUMENT', 'PERMISSION_DENIED', 'CANCELLED', 'OK']));
    expect(rejections).toEqual(
      expect.arrayContaining([
        'protocol',
        'variant',
        'expired',
        'attestation:malformed',
        'attestation:nonce',
        'attestation:ek-certificate',
      ]),
    );
  });

  it("the hello's identity and AK, mutated: the EK identity verifier answers a credential or AttestationError", async () => {
    const reasons = new Set<string>();
    await fc.assert(
      fc.asyncProperty(
        identityArb,
        fc.oneof(
          fc.constant(genuineAkPublic),
          mutationsArb.map((m) => mutate(genuineAkPublic, m)),
          fc.uint8Array({ maxLength: 120 }).map((b) => Buffer.from(b)),
        ),
        async (choice, akPublic) => {
          const identity = identityFor(choice);
          try {
            const pending = await verifier.challenge(identity, akPublic);
            expect(pending.credential.credentialBlob.length).toBeGreaterThan(0);
            reasons.add('challenged');
          } catch (err) {
            if (!(err instanceof AttestationError)) throw new Error('untyped failure', { cause: err });
            reasons.add(err.reason);
          }
        },
      ),
      { seed: 0xa71506, numRuns: 400 },
    );
    expect([...reasons]).toEqual(
      expect.arrayContaining(['challenged', 'ek-certificate', 'ek-public', 'attestation-key']),
    );
  });

  it('raw bytes that are not a protobuf message: refused by gRPC or the server, never handled', async () => {
    const Raw = grpc.makeGenericClientConstructor(
      {
        issueJoinTicket: {
          path: JoinServiceService.issueJoinTicket.path,
          requestStream: true,
          responseStream: true,
          requestSerialize: (b: Buffer) => b,
          requestDeserialize: (b: Buffer) => b,
          responseSerialize: (b: Buffer) => b,
          responseDeserialize: (b: Buffer) => b,
        },
      },
      'RawJoinService',
    );
    const raw = new Raw(`127.0.0.1:${port}`, serviceChannelCredentials());
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.uint8Array({ maxLength: 64 }), { minLength: 1, maxLength: 3 }),
          async (messages) => {
            handled.length = 0;
            const stream = (
              raw as unknown as Record<string, (options: grpc.CallOptions) => grpc.ClientDuplexStream<Buffer, Buffer>>
            )['issueJoinTicket']?.({ deadline: Date.now() + 5_000 });
            if (stream === undefined) throw new Error('no raw method');
            const status = new Promise<grpc.StatusObject>((resolve) => stream.on('status', resolve));
            stream.on('error', () => undefined);
            stream.on('data', () => undefined);
            for (const m of messages) stream.write(Buffer.from(m));
            stream.end();
            const { code, details } = await withTimeout(status, 5_000, 'raw stream status');
            // A message that does not decode never reaches serveChallenge: grpc-js itself answers
            // INTERNAL "Error deserializing request" (gRPC's rule for unparsable requests).
            const deserialisation = code === grpc.status.INTERNAL && details.startsWith('Error deserializing request');
            expect(deserialisation || CLIENT_ERRORS.has(code), `${grpc.status[code]}: ${details}`).toBe(true);
            expect(handled).toEqual([]);
          },
        ),
        { seed: 0xa71502, numRuns: 100 },
      );
    } finally {
      raw.close();
    }
  });
});

describe('seal/open and the SNI nonce under hostile input (fast-check)', () => {
  it('open: mutated sealed responses throw AtlsError; only the untouched one opens, to the plaintext', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 64 }),
        fc.array(
          fc.tuple(fc.constantFrom('servicePublicKey' as const, 'iv' as const, 'ciphertext' as const), mutationsArb),
          { maxLength: 3 },
        ),
        fc.constantFrom('same', 'other-key', 'other-nonce'),
        (plaintext, edits, who) => {
          const node = ephemeralKey();
          const nonce = randomBytes(32);
          const genuine = seal(plaintext, node.publicKey, nonce);
          const sealed = { ...genuine };
          for (const [field, mutations] of edits) sealed[field] = mutate(sealed[field], mutations);
          const untouched =
            sealed.servicePublicKey.equals(genuine.servicePublicKey) &&
            sealed.iv.equals(genuine.iv) &&
            sealed.ciphertext.equals(genuine.ciphertext) &&
            who === 'same';
          let opened: Buffer;
          try {
            opened = open(
              sealed,
              who === 'other-key' ? ephemeralKey() : node,
              who === 'other-nonce' ? randomBytes(32) : nonce,
            );
          } catch (err) {
            if (!(err instanceof AtlsError)) throw new Error('untyped failure', { cause: err });
            expect(untouched).toBe(false);
            return;
          }
          expect(untouched).toBe(true);
          expect(opened).toEqual(Buffer.from(plaintext));
        },
      ),
      { seed: 0xa71503, numRuns: 1000 },
    );
  });

  it('open and seal: random field contents throw AtlsError, never a crypto error', () => {
    const node = ephemeralKey();
    fc.assert(
      fc.property(
        fc.record({
          servicePublicKey: fc.oneof(
            fc.uint8Array({ maxLength: 70 }),
            fc.uint8Array({ minLength: 64, maxLength: 64 }).map((b) => Uint8Array.from([0x04, ...b])),
            fc.uint8Array({ minLength: 64, maxLength: 64 }).map((b) => Uint8Array.from([0x02, ...b])),
          ),
          iv: fc.uint8Array({ maxLength: 16 }),
          ciphertext: fc.uint8Array({ maxLength: 64 }),
        }),
        fc.uint8Array({ maxLength: 40 }),
        (fields, nonce) => {
          const sealed = {
            servicePublicKey: Buffer.from(fields.servicePublicKey),
            iv: Buffer.from(fields.iv),
            ciphertext: Buffer.from(fields.ciphertext),
          };
          expect(() => open(sealed, node, nonce)).toThrow(AtlsError);
          // seal() refuses a node key that is not a P-256 point the same way.
          try {
            seal(Buffer.from('x'), sealed.servicePublicKey, nonce);
          } catch (err) {
            if (!(err instanceof AtlsError)) throw new Error('untyped failure from seal', { cause: err });
          }
        },
      ),
      { seed: 0xa71504, numRuns: 1000 },
    );
  });

  it('serverNameToNonce: random and mutated server names give undefined or a 32-byte nonce, never a throw', () => {
    const valid = nonceToServerName(Buffer.alloc(NONCE_BYTES, 0xab));
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ maxLength: 120 }),
          fc.string({ unit: 'grapheme', maxLength: 90 }),
          fc.string({ unit: 'binary', maxLength: 90 }),
          fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => nonceToServerName(b)),
          fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => nonceToServerName(b).toUpperCase()),
          fc
            .tuple(fc.nat(), fc.string({ unit: 'grapheme', maxLength: 3 }), fc.integer({ min: 0, max: 3 }))
            .map(([at, text, cut]) => {
              const i = at % (valid.length + 1);
              return valid.slice(0, i) + text + valid.slice(i + cut);
            }),
        ),
        (name) => {
          const nonce = serverNameToNonce(name);
          if (nonce === undefined) return;
          expect(nonce).toHaveLength(NONCE_BYTES);
          // Accepted names are exactly the canonical name of that nonce, up to ASCII case.
          expect(nonceToServerName(nonce)).toBe(name.toLowerCase());
        },
      ),
      { seed: 0xa71505, numRuns: 2000 },
    );
  });
});
