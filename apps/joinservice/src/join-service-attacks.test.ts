import * as grpc from '@grpc/grpc-js';
import { CHALLENGE_PROTOCOL_VERSION, challengeUserData, ephemeralKey } from '@constellation/atls';
import { activationProof } from '@constellation/attestation';
import { createKubeletCsr } from '@constellation/keys';
import { MemoryLogger } from '@constellation/logger/testing';
import { JoinTicketRequest } from '@constellation/proto';
import type { AttestedRequest, IssueJoinTicketRequest, IssueJoinTicketResponse } from '@constellation/proto';
import { withTimeout } from '@constellation/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startJoinFixture } from './join-service.fixture.js';
import type { JoinFixture, SimulatedNode } from './join-service.fixture.js';

let fixture: JoinFixture;
let node: SimulatedNode;

beforeAll(async () => {
  fixture = await startJoinFixture(new MemoryLogger());
  node = await fixture.node('worker-7', '10.42.0.7');
});

afterAll(async () => {
  await node.stop();
  await fixture.close();
});

/** Bootstrap-token Secrets in kube-system, read from the real API server. */
const tokens = async (): Promise<number> => (await fixture.cluster.bootstrapTokenSecrets()).length;

type Stream = grpc.ClientDuplexStream<IssueJoinTicketRequest, IssueJoinTicketResponse>;

/**
 * Drives one IssueJoinTicket stream by hand as the genuine node would (hello with its TPM identity,
 * credential activated by its TPM), then `answer(nonce, proof)`; returns the final error, if any.
 */
async function exchange(
  answer: (nonce: Buffer, proof: Buffer) => Promise<AttestedRequest>,
): Promise<{ error?: grpc.ServiceError; sealed: boolean; nonce: Buffer }> {
  const rooted = node.issuer.rooted;
  if (rooted === undefined) throw new Error('the node must attest with a rooted variant');
  const stream: Stream = fixture.client.issueJoinTicket({ deadline: Date.now() + 20_000 });
  return withTimeout(
    new Promise((resolve) => {
      let sealed = false;
      let nonce = Buffer.alloc(0);
      stream.on('data', (message: IssueJoinTicketResponse) => {
        if (message.step?.$case === 'challenge') {
          const { credential } = message.step.value;
          nonce = Buffer.from(message.step.value.nonce);
          void (async () => {
            if (credential === undefined) throw new Error('no credential in the challenge');
            const proof = activationProof('join', await rooted.activate(credential), nonce, rooted.akName);
            stream.write({ step: { $case: 'attested', value: await answer(nonce, proof) } });
          })();
        } else if (message.step?.$case === 'sealed') sealed = true;
      });
      stream.on('error', (error: grpc.ServiceError) => {
        resolve({ error, sealed, nonce });
      });
      stream.on('end', () => {
        resolve({ sealed, nonce });
      });
      stream.write({
        step: {
          $case: 'hello',
          value: {
            attestationVariant: 'tpm2-ek',
            protocolVersion: CHALLENGE_PROTOCOL_VERSION,
            identity: rooted.identity,
            akPublic: rooted.akPublic,
            serviceNonce: Buffer.alloc(0),
          },
        },
      });
    }),
    30_000,
    'join exchange',
  );
}

/** An encoded join-ticket request for `name` at `ip`, with fresh kubelet CSRs. */
async function ticketRequest(name: string, ip: string, isControlPlane: boolean): Promise<Buffer> {
  const kubeletClientCertificateRequest = (await createKubeletCsr(name, [])).csrDer;
  const kubeletServingCertificateRequest = (await createKubeletCsr(name, [ip], [name])).csrDer;
  return Buffer.from(
    JoinTicketRequest.encode({
      diskUuid: node.diskUuid,
      kubeletClientCertificateRequest,
      kubeletServingCertificateRequest,
      isControlPlane,
    }).finish(),
  );
}

async function honestAnswer(nonce: Buffer, proof: Buffer, request: Buffer): Promise<AttestedRequest> {
  const key = ephemeralKey();
  const attestation = await node.issuer.issue(challengeUserData(key.publicKey, request), nonce);
  return { attestation, ephemeralPublicKey: key.publicKey, request, activationProof: proof };
}

describe('JoinService against replayed and relayed attestations', () => {
  it('gives a replayed attestation nothing, names the reason, and mints no token', async () => {
    const request = await ticketRequest(node.name, node.ip, false);
    let recorded: AttestedRequest | undefined;
    const first = await exchange(async (nonce, proof) => (recorded = await honestAnswer(nonce, proof, request)));
    expect(first.error).toBeUndefined();
    expect(first.sealed).toBe(true);
    const before = await tokens();
    const replay = await exchange(() => Promise.resolve(recorded!));
    expect(replay.error?.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(replay.error?.details).toMatch(
      /^attestation rejected: quote 0: quote is not bound to this nonce and user data \(replayed, relayed, or user data altered\)$/,
    );
    expect(replay.sealed).toBe(false);
    expect(await tokens()).toBe(before);
  });

  it('gives a relayed attestation with a substituted key or request nothing, and mints no token', async () => {
    const request = await ticketRequest(node.name, node.ip, false);
    const attackerRequest = await ticketRequest('attacker', '10.66.0.1', true);
    const before = await tokens();
    const swappedKey = await exchange(async (nonce, proof) => ({
      ...(await honestAnswer(nonce, proof, request)),
      ephemeralPublicKey: ephemeralKey().publicKey,
    }));
    expect(swappedKey.error?.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(swappedKey.error?.details).toBe(
      'attestation rejected: attested user data does not match what this connection expects',
    );
    const swappedRequest = await exchange(async (nonce, proof) => ({
      ...(await honestAnswer(nonce, proof, request)),
      request: attackerRequest,
    }));
    expect(swappedRequest.error?.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(await tokens()).toBe(before);
  });
});
