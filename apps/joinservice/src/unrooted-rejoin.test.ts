// The unrooted (`qemu-vtpm`) compatibility variant: the init node joined by `kubeadm init`, not
// through the JoinService, so its bootstrapper records its (disk, machine) pair itself, under
// machineIdOf(issuer). After a reboot the node asks for a rejoin ticket: the JoinService must know
// it by that same id, or the node can never rejoin (it could not, before the id was shared).
import { machineIdOf } from '@constellation/attestation';
import { deriveStateDiskKey } from '@constellation/keys';
import { DiskBindings } from '@constellation/kubeadm';
import { MemoryLogger } from '@constellation/logger/testing';
import { coreApiWithToken } from '@constellation/sandbox/testing';
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

describe('an unrooted init node rebooted', () => {
  it('is refused a rejoin ticket for a disk nobody recorded', async () => {
    const refused = await rpcFailure(node.requestRejoin(fixture.client));
    expect(refused.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(refused.details).toContain(`this machine never joined the cluster with state disk ${node.diskUuid}`);
  });

  it('gets its rejoin ticket once its init recorded the disk under machineIdOf, with the key init used', async () => {
    // What the bootstrapper's init does for the node it initialised (init-steps.ts).
    await new DiskBindings({ core: coreApiWithToken(fixture.api, 'admin') }).bind(
      node.diskUuid,
      await machineIdOf(node.issuer),
      node.name,
    );
    const ticket = await node.requestRejoin(fixture.client);
    // An unrooted machine has no EK hash: init derived its disk key without one, and so does the service.
    expect(ticket.stateDiskKey).toEqual(
      deriveStateDiskKey(fixture.masterSecret.key, fixture.masterSecret.salt, node.diskUuid, undefined),
    );
  });
});
