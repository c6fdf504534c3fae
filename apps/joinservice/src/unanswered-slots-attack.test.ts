import type * as grpc from '@grpc/grpc-js';
import { SERVICE_CHANNEL_OPTIONS, serviceChannelCredentials } from '@constellation/atls';
import { MemoryLogger } from '@constellation/logger/testing';
import { JoinServiceClient } from '@constellation/proto';
import { startSourceRelay } from '@constellation/testing';
import type { SourceRelay } from '@constellation/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startJoinFixture } from './join-service.fixture.js';
import type { JoinFixture, SimulatedNode } from './join-service.fixture.js';
import { silentCall } from './silent-call.fixture.js';
import type { SilentCall } from './silent-call.fixture.js';

/*
 * Attack (issue 42, item 6): a stranger without a TPM replays genuine nodes' public hellos (EK
 * certificates and AKs are no secret) from one address and never answers a challenge. Each hello
 * names another registered TPM, so the rules per TPM let every one of them through, and each held a
 * join slot until its challenge expired (10 s): four hellos held all four slots, and a genuine node
 * waited in line until it was turned away. Since issue 50 a call waiting for its answer holds no
 * slot at all; the bound per address on unanswered challenges stays (here 2) and refuses the rest
 * at once, saying why.
 */

let fixture: JoinFixture;
let victims: SimulatedNode[];
let bystander: SimulatedNode;
let relay: SourceRelay;
let stranger: JoinServiceClient;

beforeAll(async () => {
  // Four join slots, and the default challenge time bound (10 s): longer than a call waits in line.
  fixture = await startJoinFixture(new MemoryLogger(), { maxConcurrentTickets: 4, unansweredPerSource: 2 });
  victims = await Promise.all([1, 2, 3, 4].map((i) => fixture.node(`worker-6${i}`, `10.42.0.6${i}`)));
  bystander = await fixture.node('worker-70', '10.42.0.70');
  relay = await startSourceRelay(fixture.service.port, '127.0.0.2');
  stranger = new JoinServiceClient(`127.0.0.1:${relay.port}`, serviceChannelCredentials(), SERVICE_CHANNEL_OPTIONS);
}, 120_000);

afterAll(async () => {
  stranger.close();
  await relay.close();
  for (const node of [...victims, bystander]) await node.stop();
  await fixture.close();
}, 120_000);

describe('join slots held by hellos that never answer their challenge', () => {
  it('one address gets at most its bound of unanswered challenges; a genuine node joins at once', async () => {
    const calls: SilentCall[] = [];
    try {
      for (const victim of victims) {
        const call = silentCall(stranger, victim.hello());
        calls.push(call);
        // One at a time, so that the service has seen each before the next arrives.
        await call.first;
      }
      const firsts = await Promise.all(calls.map((call) => call.first));
      expect(firsts.slice(0, 2)).toEqual(['challenge', 'challenge']);
      for (const refused of firsts.slice(2)) {
        const err = refused as grpc.ServiceError;
        expect(err.code).toBe(8); // RESOURCE_EXHAUSTED
        expect(err.details).toBe(
          'this address already has 2 challenges it has not answered (at most 2); answer them first',
        );
        expect(Number(err.metadata.get('retry-after-ms')[0])).toBeGreaterThan(0);
      }
      const started = Date.now();
      const { ticket } = await bystander.requestJoin(fixture.client);
      expect(ticket.kubeletClientCert.length).toBeGreaterThan(0);
      expect(Date.now() - started).toBeLessThan(3_000);
    } finally {
      for (const call of calls) call.stream.cancel();
    }
  }, 60_000);
});
