import { MemoryLogger } from '@constellation/logger/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startJoinFixture } from './join-service.fixture.js';
import type { JoinFixture, SimulatedNode } from './join-service.fixture.js';

let fixture: JoinFixture;
let logger: MemoryLogger;
const nodes: SimulatedNode[] = [];

beforeAll(async () => {
  logger = new MemoryLogger();
  // One join slot: every node but one has to wait for it.
  fixture = await startJoinFixture(logger, { maxConcurrentTickets: 1, waitingCallsPerSlot: 4 });
  for (let i = 1; i <= 3; i++) nodes.push(await fixture.node(`worker-${i}`, `10.42.1.${i}`));
});

afterAll(async () => {
  for (const node of nodes) await node.stop();
  await fixture.close();
});

describe('JoinService join line', () => {
  it('lets nodes that arrive together wait for the slot instead of refusing them', async () => {
    const tickets = await Promise.all(nodes.map((node) => node.requestJoin(fixture.client)));
    for (const { ticket } of tickets) expect(ticket.kubeletClientCert.length).toBeGreaterThan(0);
    // Nobody was sent away to come back later.
    expect(logger.entries.filter((entry) => JSON.stringify(entry).includes('busy'))).toEqual([]);
  });
});
