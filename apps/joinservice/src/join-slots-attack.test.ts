import * as grpc from '@grpc/grpc-js';
import { CHALLENGE_PROTOCOL_VERSION } from '@constellation/atls';
import { MemoryLogger } from '@constellation/logger/testing';
import type { IssueJoinTicketRequest, IssueJoinTicketResponse } from '@constellation/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startJoinFixture } from './join-service.fixture.js';
import type { JoinFixture, SimulatedNode } from './join-service.fixture.js';

type Stream = grpc.ClientDuplexStream<IssueJoinTicketRequest, IssueJoinTicketResponse>;

let fixture: JoinFixture;
let node: SimulatedNode;
const idle: Stream[] = [];

beforeAll(async () => {
  // Four join slots: the attacker below opens more idle streams than that.
  fixture = await startJoinFixture(new MemoryLogger(), { maxConcurrentTickets: 4 });
  node = await fixture.node('worker-8', '10.42.0.8');
});

afterAll(async () => {
  for (const stream of idle) stream.cancel();
  await node.stop();
  await fixture.close();
});

/** Opens an IssueJoinTicket stream and sends nothing, as a stranger holding connections would. */
function idleStream(): Stream {
  const stream: Stream = fixture.client.issueJoinTicket({ deadline: Date.now() + 60_000 });
  stream.on('error', () => undefined);
  stream.on('data', () => undefined);
  idle.push(stream);
  return stream;
}

/** A stream that sends a hello naming a variant nobody accepts: refused before it costs anything. */
async function refusedHello(): Promise<grpc.ServiceError> {
  const stream: Stream = fixture.client.issueJoinTicket({ deadline: Date.now() + 10_000 });
  return new Promise((resolve) => {
    stream.on('error', resolve);
    stream.on('data', () => undefined);
    stream.write({
      step: {
        $case: 'hello',
        value: {
          attestationVariant: 'no-such-variant',
          protocolVersion: CHALLENGE_PROTOCOL_VERSION,
          akPublic: Buffer.alloc(0),
          serviceNonce: Buffer.alloc(0),
        },
      },
    });
  });
}

describe('JoinService join slots against a stranger holding streams (attacker 3)', () => {
  it('streams without a hello take no join slot: a genuine node still gets its ticket', async () => {
    for (let i = 0; i < 12; i++) idleStream();
    // Let the server see every idle stream before the genuine node asks.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const { ticket } = await node.requestJoin(fixture.client);
    expect(ticket.kubeletClientCert.length).toBeGreaterThan(0);
  });

  it('refused hellos take no slot either, and say why', async () => {
    const refusals = await Promise.all(Array.from({ length: 8 }, () => refusedHello()));
    for (const refusal of refusals) {
      expect(refusal.code).toBe(grpc.status.PERMISSION_DENIED);
      expect(refusal.details).toMatch(/attestation variant "no-such-variant" is not accepted/);
    }
    const { ticket } = await node.requestJoin(fixture.client);
    expect(ticket.kubeletClientCert.length).toBeGreaterThan(0);
  });
});
