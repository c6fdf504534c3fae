import * as grpc from '@grpc/grpc-js';
import { MemoryLogger } from '@constellation/logger/testing';
import type { IssueJoinTicketRequest, IssueJoinTicketResponse } from '@constellation/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startJoinFixture } from './join-service.fixture.js';
import type { JoinFixture, SimulatedNode } from './join-service.fixture.js';

/*
 * Someone with a cloud account but no machine in this cluster (attacker 1 flooding like attacker
 * 3) starts VMs of their own: each has a genuine TPM whose EK certificate chains to the platform's
 * EK CA, so each hello passes the EK check. Before this rule every such hello was challenged and
 * then held a slot (or a place in line) for the challenge's whole TTL while its sender stayed
 * silent: as many TPMs as the service has slots and places kept every registered node out. The
 * registry is now asked before the challenge, so an unregistered TPM is refused at once.
 */

type Stream = grpc.ClientDuplexStream<IssueJoinTicketRequest, IssueJoinTicketResponse>;

const SLOTS = 2;
/** Slots and places in line (one per slot by default). */
const PLACES = SLOTS * 2;
let fixture: JoinFixture;
let strangers: SimulatedNode[];
let bystander: SimulatedNode;

beforeAll(async () => {
  fixture = await startJoinFixture(new MemoryLogger(), { maxConcurrentTickets: SLOTS });
  strangers = await Promise.all(
    Array.from({ length: PLACES }, (_, i) =>
      fixture.node(`vm-of-someone-else-${i}`, `10.99.0.${i + 1}`, { registered: false }),
    ),
  );
  bystander = await fixture.node('worker-41', '10.42.0.41');
}, 60_000);

afterAll(async () => {
  await Promise.all([...strangers, bystander].map((node) => node.stop()));
  await fixture.close();
});

/** A call that sends the node's hello and never answers; `first` is the challenge or the refusal. */
function silentCall(node: SimulatedNode): { stream: Stream; first: Promise<'challenge' | grpc.ServiceError> } {
  const stream: Stream = fixture.client.issueJoinTicket({ deadline: Date.now() + 30_000 });
  const first = new Promise<'challenge' | grpc.ServiceError>((resolve) => {
    stream.on('error', resolve);
    stream.once('data', () => {
      resolve('challenge');
    });
  });
  stream.write({ step: node.hello() });
  return { stream, first };
}

describe('hellos from genuine TPMs the registry does not know (attacker 1 with VMs of their own)', () => {
  it('are refused before the challenge, naming the EK, so they hold no slot and registered nodes join', async () => {
    const calls = strangers.map(silentCall);
    try {
      const outcomes = await Promise.all(calls.map((call) => call.first));
      outcomes.forEach((outcome, i) => {
        expect(outcome).not.toBe('challenge');
        expect(outcome).toMatchObject({
          code: grpc.status.PERMISSION_DENIED,
          details: `endorsement key sha256:${strangers[i]?.ekPublicKeyHash ?? ''} is not registered: the platform knows no machine with this TPM`,
        });
      });
      const started = Date.now();
      const { ticket } = await bystander.requestJoin(fixture.client);
      expect(ticket.kubeletClientCert.length).toBeGreaterThan(0);
      expect(Date.now() - started).toBeLessThan(3_000);
    } finally {
      for (const call of calls) call.stream.cancel();
    }
  }, 30_000);

  it('cost the platform one registry lookup per TPM in a while, however many hellos name it', async () => {
    const stranger = strangers[0];
    if (stranger === undefined) throw new Error('no stranger');
    // Sent while the earlier answer is fresh, the hellos of one TPM are answered from it: a stranger
    // holding copies of EK certificates cannot turn hellos into calls on the platform's API.
    const before = fixture.registry.instanceLookups;
    for (let i = 0; i < 5; i++) {
      const { stream, first } = silentCall(stranger);
      expect(await first).toMatchObject({ code: grpc.status.PERMISSION_DENIED });
      stream.cancel();
    }
    expect(fixture.registry.instanceLookups - before).toBeLessThanOrEqual(1);
  }, 30_000);
});
