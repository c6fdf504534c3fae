import * as grpc from '@grpc/grpc-js';
import { MemoryLogger } from '@constellation/logger/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubeletKubectl, nodeObject } from './kubelet-credentials.fixture.js';
import { rpcFailure, startJoinFixture } from './join-service.fixture.js';
import type { JoinFixture, SimulatedNode } from './join-service.fixture.js';

let fixture: JoinFixture;
let a: SimulatedNode;
let b: SimulatedNode;

beforeAll(async () => {
  fixture = await startJoinFixture(new MemoryLogger());
  [a, b] = await Promise.all([
    fixture.node('control-plane-a', '10.42.0.11'),
    fixture.node('control-plane-b', '10.42.0.12'),
  ]);
});

afterAll(async () => {
  await Promise.all([a.stop(), b.stop()]);
  await fixture.close();
});

describe('control-plane joins', () => {
  it('serialises two control planes joining at once: one proceeds, one retries, both succeed in the end', async () => {
    const results = await Promise.allSettled([
      a.requestJoin(fixture.client, { controlPlane: true }),
      b.requestJoin(fixture.client, { controlPlane: true }),
    ]);
    const winners = results.filter((r) => r.status === 'fulfilled');
    const losers = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as grpc.ServiceError] : []));
    expect(winners).toHaveLength(1);
    expect(losers).toHaveLength(1);
    expect(losers[0]?.code).toBe(grpc.status.UNAVAILABLE);
    expect(losers[0]?.details).toMatch(/^another control-plane node \(control-plane-[ab]\) is joining; retry later$/);
    expect(Number(losers[0]?.metadata.get('retry-after-ms')[0] ?? 0)).toBeGreaterThan(0);

    const winner = results[0].status === 'fulfilled' ? a : b;
    const won = winners[0];
    if (won?.status !== 'fulfilled') throw new Error('no winner');
    const winnerTicket = won.value;
    const loser = winner === a ? b : a;
    // Still blocked while the winner has not registered...
    expect((await rpcFailure(loser.requestJoin(fixture.client, { controlPlane: true }))).code).toBe(
      grpc.status.UNAVAILABLE,
    );
    // ...and free once its kubeadm join registered the Node: its kubelet registers it with the
    // client certificate of its ticket (the Node authorizer lets a kubelet create its own Node).
    const kubelet = await kubeletKubectl(fixture, winnerTicket);
    await kubelet.run(['create', '-f', '-'], JSON.stringify(nodeObject(winner.name)));
    const { ticket } = await loser.requestJoin(fixture.client, { controlPlane: true });
    expect(ticket.controlPlaneFiles.length).toBeGreaterThan(0);
  });

  it('lets workers join while a control plane holds the lease', async () => {
    const worker = await fixture.node('worker-9', '10.42.0.19');
    try {
      await expect(worker.requestJoin(fixture.client)).resolves.toBeDefined();
    } finally {
      await worker.stop();
    }
  });
});
