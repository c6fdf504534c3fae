// Disk receipts under attack (attacker 2, the owner of one genuine node, and attacker 1 with a
// copy of a receipt, which is not secret): a red-team pass tried these and the checks held.
import { MemoryLogger } from '@constellation/logger/testing';
import { deriveStateDiskKey } from '@constellation/keys';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpcFailure, startJoinFixture } from './join-service.fixture.js';
import type { JoinFixture, SimulatedNode } from './join-service.fixture.js';

let fixture: JoinFixture;
let owner: SimulatedNode;
let thief: SimulatedNode;

beforeAll(async () => {
  fixture = await startJoinFixture(new MemoryLogger());
  [owner, thief] = await Promise.all([
    fixture.node('worker-owner', '10.42.0.61'),
    fixture.node('worker-thief', '10.42.0.62'),
  ]);
  await owner.requestJoin(fixture.client);
  await thief.requestJoin(fixture.client);
}, 60_000);

afterAll(async () => {
  await Promise.all([owner.stop(), thief.stop()]);
  await fixture.close();
});

describe('disk receipts under attack', () => {
  it('take the disk UUID in its one spelling only: upper case is refused, receipt or not', async () => {
    const upper = owner.diskUuid.toUpperCase();
    expect(await rpcFailure(owner.requestRejoin(fixture.client, { diskUuid: upper }))).toMatchObject({
      code: grpc.status.INVALID_ARGUMENT,
      details: `disk_uuid must be a lower-case UUID, got ${JSON.stringify(upper)}`,
    });
  });

  it('refuse an altered receipt: cut, extended, one bit flipped, all zeros', async () => {
    const receipt = owner.diskReceipt;
    const flipped = Buffer.from(receipt);
    flipped[0] = (flipped[0] ?? 0) ^ 1;
    for (const diskReceipt of [
      receipt.subarray(0, 16),
      Buffer.concat([receipt, Buffer.from([0])]),
      flipped,
      Buffer.alloc(32),
    ]) {
      expect(await rpcFailure(owner.requestRejoin(fixture.client, { diskReceipt }))).toMatchObject({
        code: grpc.status.PERMISSION_DENIED,
        details: expect.stringMatching(/^the disk receipt shown is not this machine's for state disk /) as unknown,
      });
    }
  });

  it("are of no use to another machine, with the owner's disk; the owner still rejoins", async () => {
    const refused = await rpcFailure(
      thief.requestRejoin(fixture.client, { diskUuid: owner.diskUuid, diskReceipt: owner.diskReceipt }),
    );
    expect(refused.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(refused.details).toMatch(/^the disk receipt shown is not this machine's/);
    expect((await owner.requestRejoin(fixture.client)).stateDiskKey).toEqual(
      deriveStateDiskKey(fixture.masterSecret.key, fixture.masterSecret.salt, owner.diskUuid, owner.ekPublicKeyHash),
    );
  });
});
