// The unrooted (`qemu-vtpm`) compatibility variant: the init node joined by `kubeadm init`, not
// through the JoinService, so its bootstrapper makes its disk receipt itself, for
// machineIdOf(issuer). After a reboot the node shows it for a rejoin ticket: the JoinService must
// know the node by that same id, or the node can never rejoin (it could not, before the id was
// shared).
import { machineIdOf } from '@constellation/attestation';
import { deriveDiskReceipt, deriveStateDiskKey } from '@constellation/keys';
import { diskBindingName } from '@constellation/kubeadm';
import { MemoryLogger } from '@constellation/logger/testing';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpcFailure, startJoinFixture } from './join-service.fixture.js';
import type { JoinFixture, SimulatedNode } from './join-service.fixture.js';

let fixture: JoinFixture;
let node: SimulatedNode;

beforeAll(async () => {
  fixture = await startJoinFixture(new MemoryLogger(), { attestationVariant: 'qemu-vtpm' });
  const rooted = await fixture.node('control-plane-0', '10.42.0.10');
  node = Object.assign(Object.create(rooted) as SimulatedNode, { issuer: rooted.unrootedIssuer() });
}, 60_000);

afterAll(async () => {
  await node.stop();
  await fixture.close();
});

/** An unrooted machine has no EK hash: init derived its disk key without one, and so does the service. */
const initDiskKey = (): Buffer =>
  deriveStateDiskKey(fixture.masterSecret.key, fixture.masterSecret.salt, node.diskUuid, undefined);

describe('an unrooted init node rebooted', () => {
  it('is refused a rejoin ticket for a disk without a receipt or a record', async () => {
    const refused = await rpcFailure(node.requestRejoin(fixture.client, { diskReceipt: Buffer.alloc(0) }));
    expect(refused.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(refused.details).toContain(`this machine showed no disk receipt for state disk ${node.diskUuid}`);
  });

  it('gets its rejoin ticket with the receipt its init made under machineIdOf, with the key init used', async () => {
    // What the bootstrapper's init does for the node it initialised (init-steps.ts).
    const diskReceipt = deriveDiskReceipt(
      fixture.masterSecret.key,
      fixture.masterSecret.salt,
      node.diskUuid,
      await machineIdOf(node.issuer),
    );
    expect((await node.requestRejoin(fixture.client, { diskReceipt })).stateDiskKey).toEqual(initDiskKey());
  });

  it('still rejoins without a receipt where an earlier version recorded its disk in the API', async () => {
    // Earlier versions wrote this record at every join (and init) instead of handing out receipts.
    const machine = await machineIdOf(node.issuer);
    await fixture.cluster.core.createNamespacedConfigMap({
      namespace: 'kube-system',
      body: {
        metadata: { name: diskBindingName(node.diskUuid, machine) },
        data: { ekPublicKeyHash: machine, diskUuid: node.diskUuid },
      },
    });
    expect((await node.requestRejoin(fixture.client, { diskReceipt: Buffer.alloc(0) })).stateDiskKey).toEqual(
      initDiskKey(),
    );
  });
});
