import * as grpc from '@grpc/grpc-js';
import { MemoryLogger } from '@constellation/logger/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startJoinFixture } from './join-service.fixture.js';
import type { JoinFixture, SimulatedNode } from './join-service.fixture.js';
import { silentCall } from './silent-call.fixture.js';
import type { JoinHello, SilentCall } from './silent-call.fixture.js';

/*
 * The owner of one genuine node (attacker 2) opens every slot's worth of join calls with its own,
 * valid hello and never answers the challenges. Each call passes the EK check, so before this rule
 * each held a slot for the challenge's whole TTL (10 s), and four calls every ten seconds kept
 * every other node out. A TPM now has one challenge outstanding at a time.
 */

const SLOTS = 4;
let fixture: JoinFixture;
let owned: SimulatedNode;
let bystander: SimulatedNode;
let ownHello: JoinHello;

beforeAll(async () => {
  fixture = await startJoinFixture(new MemoryLogger(), { maxConcurrentTickets: SLOTS });
  owned = await fixture.node('worker-31', '10.42.0.31');
  bystander = await fixture.node('worker-32', '10.42.0.32');
  ownHello = owned.hello();
});

afterAll(async () => {
  await owned.stop();
  await bystander.stop();
  await fixture.close();
});

/** A call that sends the owner's own hello and never answers. */
const silentOwnCall = (): SilentCall => silentCall(fixture.client, ownHello);

describe('one outstanding challenge per TPM (attacker 2)', () => {
  it('refuses further challenges for a TPM that has one, so its owner holds one slot, not all of them', async () => {
    const calls = Array.from({ length: SLOTS }, silentOwnCall);
    const outcomes = await Promise.all(calls.map((call) => call.first));
    expect(outcomes.filter((outcome) => outcome === 'challenge')).toHaveLength(1);
    const refusals = outcomes.filter((outcome): outcome is grpc.ServiceError => outcome !== 'challenge');
    expect(refusals).toHaveLength(SLOTS - 1);
    for (const refusal of refusals) {
      expect(refusal.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
      // Refused before the line by the one call per named TPM; the outstanding-challenge claim
      // (by the proven EK) stays behind it for another encoding of the same certificate.
      expect(refusal.details).toMatch(
        /^this TPM \(EK certificate sha256:[0-9a-f]{64}\) already has a call from this address in line or being served; one at a time/,
      );
      const retryAfter = Number(refusal.metadata.get('retry-after-ms')[0]);
      expect(retryAfter).toBeGreaterThan(0);
      expect(retryAfter).toBeLessThanOrEqual(10_000);
    }

    // The other nodes are not kept out: a bystander joins at once.
    const started = Date.now();
    const { ticket } = await bystander.requestJoin(fixture.client);
    expect(ticket.kubeletClientCert.length).toBeGreaterThan(0);
    expect(Date.now() - started).toBeLessThan(3_000);

    // Once the outstanding call ends, the TPM may be challenged again, and its node joins.
    for (const call of calls) call.stream.cancel();
    await new Promise((resolve) => setTimeout(resolve, 200));
    const again = await owned.requestJoin(fixture.client);
    expect(again.ticket.kubeletClientCert.length).toBeGreaterThan(0);
  }, 30_000);
});
