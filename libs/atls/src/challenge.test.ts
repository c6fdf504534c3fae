import { randomBytes } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import {
  TpmIssuer,
  TpmValidator,
  componentDigest,
  expectedMeasurements,
  measureBoot,
} from '@constellation/attestation';
import type { BootComponent, Issuer } from '@constellation/attestation';
import { JoinServiceClient, JoinServiceService, JoinTicketRequest } from '@constellation/proto';
import type { AttestedRequest, IssueJoinTicketRequest, IssueJoinTicketResponse } from '@constellation/proto';
import { sleep, startSwtpm, withTimeout } from '@constellation/testing';
import type { Swtpm } from '@constellation/testing';
import { SocketTransport, Tpm } from '@constellation/tpm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { challengeUserData } from './challenge-binding.js';
import { requestWithAttestation } from './challenge-client.js';
import { CHALLENGE_PROTOCOL_VERSION } from './challenge-messages.js';
import type { ChallengeRejection } from './challenge-server.js';
import { serveChallenge } from './challenge-server.js';
import { AtlsError } from './errors.js';
import { ephemeralKey, open } from './seal.js';
import { serviceChannelCredentials, serviceServerCredentials } from './service-tls.js';
import { StatusError } from '@constellation/proto';

const components: BootComponent[] = [
  { pcr: 9, description: 'bootstrapper bundle', digest: componentDigest('bundle v1') },
];
let measurements = expectedMeasurements(components, [9, 15]);

let swtpm: Swtpm;
let tpm: Tpm;
let issuer: Issuer;
let server: grpc.Server;
let client: JoinServiceClient;
let handled: JoinTicketRequest[] = [];
let rejections: ChallengeRejection[] = [];
let handlerError: Error | undefined;

beforeAll(async () => {
  swtpm = await startSwtpm();
  tpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port, keepConnection: true }));
  await measureBoot(tpm, components);
  issuer = new TpmIssuer(tpm);
  server = new grpc.Server();
  server.addService(JoinServiceService, {
    issueJoinTicket: (call: grpc.ServerDuplexStream<IssueJoinTicketRequest, IssueJoinTicketResponse>) => {
      serveChallenge(call, {
        validators: [new TpmValidator({ variant: 'qemu-vtpm', measurements: () => measurements })],
        challengeTtlMs: 1_000,
        maxRequestBytes: 4096,
        onRejected: (reason) => rejections.push(reason),
        handle: (request) => {
          const decoded = JoinTicketRequest.decode(request);
          handled.push(decoded);
          if (handlerError !== undefined) return Promise.reject(handlerError);
          return Promise.resolve(Buffer.from(`ticket for ${decoded.diskUuid}`));
        },
      });
    },
    issueRejoinTicket: (call: grpc.ServerDuplexStream<unknown, unknown>) => {
      call.emit('error', { code: grpc.status.UNIMPLEMENTED, details: 'not in this test' });
    },
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', serviceServerCredentials(), (err, bound) => {
      if (err) reject(err);
      else resolve(bound);
    });
  });
  client = new JoinServiceClient(`127.0.0.1:${port}`, serviceChannelCredentials());
});

afterAll(async () => {
  client.close();
  server.forceShutdown();
  await tpm.close();
  await swtpm.stop();
});

const request = (diskUuid = 'a1b2c3d4-0000-4000-8000-000000000001'): Buffer =>
  Buffer.from(
    JoinTicketRequest.encode({
      diskUuid,
      kubeletClientCertificateRequest: Buffer.from('csr'),
      kubeletServingCertificateRequest: Buffer.from('csr'),
      isControlPlane: false,
    }).finish(),
  );

const open_stream = () => client.issueJoinTicket({ deadline: Date.now() + 10_000 });

/** Drives a stream by hand, as an attacker would: returns messages until the stream ends or fails. */
async function manual(
  script: (
    stream: grpc.ClientDuplexStream<IssueJoinTicketRequest, IssueJoinTicketResponse>,
    next: () => Promise<IssueJoinTicketResponse>,
  ) => Promise<void>,
): Promise<grpc.ServiceError | undefined> {
  const stream = open_stream();
  const queue: IssueJoinTicketResponse[] = [];
  let failure: grpc.ServiceError | undefined;
  let ended = false;
  let waiting: (() => void) | undefined;
  const done = new Promise<void>((resolve) => {
    stream.on('error', (err: grpc.ServiceError) => {
      failure = err;
      waiting?.();
      resolve();
    });
    stream.on('end', () => {
      ended = true;
      waiting?.();
      resolve();
    });
  });
  stream.on('data', (m: IssueJoinTicketResponse) => {
    queue.push(m);
    waiting?.();
  });
  const next = async (): Promise<IssueJoinTicketResponse> => {
    while (queue.length === 0) {
      if (failure !== undefined) throw failure;
      if (ended) throw new Error('stream ended');
      await new Promise<void>((resolve) => (waiting = resolve));
    }
    return queue.shift()!;
  };
  await script(stream, next).catch(() => undefined);
  stream.end();
  await withTimeout(done, 10_000, 'stream end');
  return failure;
}

const hello = {
  step: {
    $case: 'hello' as const,
    value: {
      attestationVariant: 'qemu-vtpm',
      protocolVersion: CHALLENGE_PROTOCOL_VERSION,
      akPublic: Buffer.alloc(0),
      serviceNonce: Buffer.alloc(0),
    },
  },
};

/** A correct answer to `nonce` for `requestBytes`, with a fresh ephemeral key. */
async function answer(
  nonce: Buffer,
  requestBytes: Buffer,
): Promise<{ attested: AttestedRequest; key: ReturnType<typeof ephemeralKey> }> {
  const key = ephemeralKey();
  const attestation = await issuer.issue(challengeUserData(key.publicKey, requestBytes), nonce);
  return {
    attested: {
      attestation,
      ephemeralPublicKey: key.publicKey,
      request: requestBytes,
      activationProof: Buffer.alloc(0),
    },
    key,
  };
}

function reset(): void {
  handled = [];
  rejections = [];
  handlerError = undefined;
  measurements = expectedMeasurements(components, [9, 15]);
}

describe('attestation challenge (node to JoinService) over real TLS with a real swtpm', () => {
  it('gives an attested node its sealed answer', async () => {
    reset();
    const plaintext = await requestWithAttestation(open_stream(), issuer, request('disk-1'));
    expect(plaintext.toString()).toBe('ticket for disk-1');
    expect(handled.map((r) => r.diskUuid)).toEqual(['disk-1']);
  });

  it('refuses a node with a wrong PCR, naming it, and never calls the handler', async () => {
    reset();
    measurements = expectedMeasurements([{ ...components[0]!, digest: componentDigest('bundle v2') }], [9, 15]);
    const err = await requestWithAttestation(open_stream(), issuer, request()).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: grpc.status.PERMISSION_DENIED });
    expect((err as grpc.ServiceError).details).toMatch(
      /^attestation rejected: measurements do not match: PCR 9: expected [0-9a-f]{64}, actual [0-9a-f]{64}/,
    );
    expect(handled).toEqual([]);
    expect(rejections).toEqual(['attestation:measurements']);
  });

  it('refuses an attested answer replayed from an earlier exchange', async () => {
    reset();
    let recorded: AttestedRequest | undefined;
    await manual(async (stream, next) => {
      stream.write(hello);
      const challenge = await next();
      if (challenge.step?.$case !== 'challenge') throw new Error('no challenge');
      recorded = (await answer(challenge.step.value.nonce, request())).attested;
      stream.write({ step: { $case: 'attested', value: recorded } });
      await next();
    });
    expect(handled).toHaveLength(1);
    const failure = await manual(async (stream, next) => {
      stream.write(hello);
      await next();
      stream.write({ step: { $case: 'attested', value: recorded! } });
      await next();
    });
    expect(failure?.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(failure?.details).toMatch(/not bound to this nonce/);
    expect(handled).toHaveLength(1);
  });

  it("refuses a relay that swaps in its own key or request, and cannot read an answer sealed to the node's key", async () => {
    reset();
    // The attacker forwards the service's nonce to a genuine node and receives its answer.
    const swappedKey = await manual(async (stream, next) => {
      stream.write(hello);
      const challenge = await next();
      if (challenge.step?.$case !== 'challenge') throw new Error('no challenge');
      const genuine = await answer(challenge.step.value.nonce, request('victim'));
      stream.write({
        step: { $case: 'attested', value: { ...genuine.attested, ephemeralPublicKey: ephemeralKey().publicKey } },
      });
      await next();
    });
    expect(swappedKey?.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(swappedKey?.details).toMatch(/user data does not match/);
    const swappedRequest = await manual(async (stream, next) => {
      stream.write(hello);
      const challenge = await next();
      if (challenge.step?.$case !== 'challenge') throw new Error('no challenge');
      const genuine = await answer(challenge.step.value.nonce, request('victim'));
      stream.write({ step: { $case: 'attested', value: { ...genuine.attested, request: request('attacker') } } });
      await next();
    });
    expect(swappedRequest?.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(handled).toEqual([]);

    // Left untouched, the answer is sealed to the victim's key: the attacker's key cannot open it.
    let sealedOpenedByAttacker: unknown;
    await manual(async (stream, next) => {
      stream.write(hello);
      const challenge = await next();
      if (challenge.step?.$case !== 'challenge') throw new Error('no challenge');
      const genuine = await answer(challenge.step.value.nonce, request('victim'));
      stream.write({ step: { $case: 'attested', value: genuine.attested } });
      const sealed = await next();
      if (sealed.step?.$case !== 'sealed') throw new Error('no sealed answer');
      try {
        open(sealed.step.value, ephemeralKey(), challenge.step.value.nonce);
      } catch (err) {
        sealedOpenedByAttacker = err;
      }
      expect(open(sealed.step.value, genuine.key, challenge.step.value.nonce).toString()).toBe('ticket for victim');
    });
    expect(sealedOpenedByAttacker).toBeInstanceOf(AtlsError);
  });

  it('refuses an answer that comes after the challenge expired', async () => {
    reset();
    const slow: Issuer = {
      variant: issuer.variant,
      issue: async (u, n) => {
        await sleep(1_300);
        return issuer.issue(u, n);
      },
    };
    const err = await requestWithAttestation(open_stream(), slow, request()).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: grpc.status.DEADLINE_EXCEEDED });
    expect(handled).toEqual([]);
    expect(rejections).toEqual(['expired']);
  });

  it('answers at most once per nonce, however often the node answers the challenge', async () => {
    reset();
    let sealedAnswers = 0;
    const failure = await manual(async (stream, next) => {
      stream.write(hello);
      const challenge = await next();
      if (challenge.step?.$case !== 'challenge') throw new Error('no challenge');
      const { attested } = await answer(challenge.step.value.nonce, request());
      for (let i = 0; i < 3; i++) stream.write({ step: { $case: 'attested', value: attested } });
      for (;;) if ((await next()).step?.$case === 'sealed') sealedAnswers++;
    });
    expect(handled).toHaveLength(1);
    expect(sealedAnswers).toBeLessThanOrEqual(1);
    // Either the exchange completed before the duplicates arrived (they are ignored), or a
    // duplicate arrived while the first was being handled and ended the stream.
    if (failure !== undefined) expect(failure.details).toMatch(/already answered/);
  });

  it('refuses to skip the attestation: no hello, a test-only variant, an unknown protocol version', async () => {
    reset();
    const noHello = await manual(async (stream, next) => {
      stream.write({
        step: {
          $case: 'attested',
          value: {
            attestation: Buffer.alloc(0),
            ephemeralPublicKey: Buffer.alloc(0),
            request: request(),
            activationProof: Buffer.alloc(0),
          },
        },
      });
      await next();
    });
    expect(noHello).toMatchObject({
      code: grpc.status.INVALID_ARGUMENT,
      details: 'the first message must be a hello announcing the attestation variant',
    });
    const dummy = await manual(async (stream, next) => {
      stream.write({
        step: {
          $case: 'hello',
          value: {
            attestationVariant: 'dummy',
            protocolVersion: CHALLENGE_PROTOCOL_VERSION,
            akPublic: Buffer.alloc(0),
            serviceNonce: Buffer.alloc(0),
          },
        },
      });
      await next();
    });
    expect(dummy).toMatchObject({
      code: grpc.status.PERMISSION_DENIED,
      details: 'attestation variant "dummy" is not accepted; this service accepts: qemu-vtpm',
    });
    const version = await manual(async (stream, next) => {
      stream.write({
        step: {
          $case: 'hello',
          value: {
            attestationVariant: 'qemu-vtpm',
            protocolVersion: 7,
            akPublic: Buffer.alloc(0),
            serviceNonce: Buffer.alloc(0),
          },
        },
      });
      await next();
    });
    expect(version?.code).toBe(grpc.status.FAILED_PRECONDITION);
    expect(handled).toEqual([]);
  });

  it('refuses oversized requests and garbage attestations', async () => {
    reset();
    const oversized = await manual(async (stream, next) => {
      stream.write(hello);
      const challenge = await next();
      if (challenge.step?.$case !== 'challenge') throw new Error('no challenge');
      const { attested } = await answer(challenge.step.value.nonce, Buffer.alloc(10_000));
      stream.write({ step: { $case: 'attested', value: attested } });
      await next();
    });
    expect(oversized?.code).toBe(grpc.status.INVALID_ARGUMENT);
    const garbage = await manual(async (stream, next) => {
      stream.write(hello);
      await next();
      stream.write({
        step: {
          $case: 'attested',
          value: {
            attestation: randomBytes(300),
            ephemeralPublicKey: ephemeralKey().publicKey,
            request: request(),
            activationProof: Buffer.alloc(0),
          },
        },
      });
      await next();
    });
    expect(garbage?.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(rejections).toContain('attestation:malformed');
    expect(handled).toEqual([]);
  });

  it("passes the handler's retryable status through with its metadata", async () => {
    reset();
    handlerError = new StatusError(grpc.status.UNAVAILABLE, 'another control plane is joining; retry later', {
      'retry-after-ms': '5000',
    });
    const stream = open_stream();
    const metadata = new Promise<grpc.Metadata>((resolve) =>
      stream.on('status', (status: grpc.StatusObject) => {
        resolve(status.metadata);
      }),
    );
    const err = await requestWithAttestation(stream, issuer, request()).catch((e: unknown) => e);
    expect(err).toMatchObject({
      code: grpc.status.UNAVAILABLE,
      details: 'another control plane is joining; retry later',
    });
    expect((await metadata).get('retry-after-ms')).toEqual(['5000']);
  });
});
