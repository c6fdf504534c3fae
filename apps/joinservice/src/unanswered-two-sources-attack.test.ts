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
 * Attack (issue 50, item 5): the bound per address on calls with unanswered challenges (half the
 * slots each) gives way to a second address. Two strangers without a TPM replay four genuine
 * nodes' public hellos, two each, and never answer: between them they held all four slots for the
 * challenge's whole time bound (10 s), and a genuine node waited in line until it was turned away.
 * In mini every pod has an address of its own. A call waiting for its node's answer now holds no
 * slot: the slots are for the service's own work (preparing a challenge, checking an answer,
 * issuing the ticket), and an answered call goes ahead of the line.
 */

let fixture: JoinFixture;
let victims: SimulatedNode[];
let bystander: SimulatedNode;
const relays: SourceRelay[] = [];
const strangers: JoinServiceClient[] = [];

beforeAll(async () => {
  fixture = await startJoinFixture(new MemoryLogger(), { maxConcurrentTickets: 4 });
  victims = await Promise.all([1, 2, 3, 4].map((i) => fixture.node(`worker-8${i}`, `10.42.0.8${i}`)));
  bystander = await fixture.node('worker-90', '10.42.0.90');
  for (const address of ['127.0.0.2', '127.0.0.3']) {
    const relay = await startSourceRelay(fixture.service.port, address);
    relays.push(relay);
    strangers.push(
      new JoinServiceClient(`127.0.0.1:${relay.port}`, serviceChannelCredentials(), SERVICE_CHANNEL_OPTIONS),
    );
  }
}, 120_000);

afterAll(async () => {
  for (const stranger of strangers) stranger.close();
  for (const relay of relays) await relay.close();
  for (const node of [...victims, bystander]) await node.stop();
  await fixture.close();
}, 120_000);

describe('slots held by challenges nobody answers, from two addresses', () => {
  it('two addresses with two silent calls each hold no slot; a genuine node joins at once', async () => {
    const calls: SilentCall[] = [];
    try {
      for (const [i, victim] of victims.entries()) {
        const call = silentCall(strangers[i % 2]!, victim.hello());
        calls.push(call);
        await call.first;
      }
      // Every replayed hello was challenged: each address stays within its own bound.
      expect(await Promise.all(calls.map((call) => call.first))).toEqual([
        'challenge',
        'challenge',
        'challenge',
        'challenge',
      ]);
      // One call, no retry. Before: it waited in line for the 5 s a call may wait for a slot, and
      // was turned away (RESOURCE_EXHAUSTED).
      const { ticket } = await bystander.requestJoin(fixture.client);
      expect(ticket.kubeletClientCert.length).toBeGreaterThan(0);
    } finally {
      for (const call of calls) call.stream.cancel();
    }
  }, 60_000);
});
