import { Refusal } from '@constellation/errors';
import { sharedKubernetes } from '@constellation/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  configMapsIn,
  coreWithPeerBeforeFirstPost,
  coreWithToken,
  failure,
  recordedIn,
  recordsNamespace,
  sharedApiRelay,
} from './claim-records.fixture.js';
import type { RecordsNamespace } from './claim-records.fixture.js';
import { NodeAddressBindings, machineAddressSlotName, nodeAddressBindingName } from './node-address-binding.js';

// Against the run's real API server, in a namespace of this file's own, as a service account that
// may get and create ConfigMaps there.

const A = 'a'.repeat(64);
const B = 'b'.repeat(64);
let ns: RecordsNamespace;
let addresses: NodeAddressBindings;

beforeAll(async () => {
  ns = await recordsNamespace('node-address-binding');
  addresses = new NodeAddressBindings({
    core: coreWithToken(sharedKubernetes().apiServerUrl, ns.token),
    namespace: ns.name,
  });
});

afterAll(async () => {
  await ns.delete();
});

const recorded = (ip: string): Promise<boolean> => recordedIn(ns.admin, ns.name, nodeAddressBindingName(ip));
const recordedAny = async (ips: readonly string[]): Promise<boolean> =>
  (await Promise.all(ips.map(recorded))).some(Boolean);
const heldBy = (ip: string, owner: string, node: string): string =>
  `address ${ip} belongs to another machine (EK sha256:${owner}, node "${node}"); to give it to this one, delete ConfigMap ${ns.name}/${nodeAddressBindingName(ip)}`;

describe('NodeAddressBindings', () => {
  it('keeps one record per address, however it is spelt', () => {
    expect(nodeAddressBindingName('0:0:0:0:0:ffff:0a2a:0001')).toBe(nodeAddressBindingName('10.42.0.1'));
    expect(nodeAddressBindingName('FD00:0::1')).toBe(nodeAddressBindingName('fd00::1'));
  });

  it('gives an address to the first machine, lets a machine add addresses, and refuses a held one in any spelling', async () => {
    await addresses.bind(['10.42.1.1'], 'metal-1', A);
    await addresses.bind(['10.42.1.1', '10.42.1.2'], 'metal-1', A); // the same machine, one more address
    for (const ip of ['10.42.1.2', '::ffff:10.42.1.2', '::FFFF:a2a:102']) {
      expect(await failure(addresses.bind(['10.42.1.9', ip], 'metal-2', B)), ip).toMatchObject({
        kind: 'denied',
        reason: 'address',
        message: heldBy('10.42.1.2', A, 'metal-1'),
      });
    }
    expect(await recorded('10.42.1.9')).toBe(false); // the refused ask claimed none of its addresses
    await addresses.bind(['10.42.1.9'], 'metal-2', B);
  });

  it('lets a machine hold at most 8 addresses, so the owner of one cannot reserve a subnet', async () => {
    const many = (from: number, count: number): string[] =>
      Array.from({ length: count }, (_, i) => `10.42.5.${String(from + i)}`);
    expect(await failure(addresses.check(many(1, 9), A))).toMatchObject({
      kind: 'denied',
      reason: 'address',
      message: 'the kubelet serving certificate request names 9 addresses; a machine holds at most 8',
    });
    expect(await failure(addresses.bind(many(1, 9), 'metal-7', A))).toMatchObject({ reason: 'address' });
    expect(await recordedAny(many(1, 9))).toBe(false);
    // Eight over several asks (a new lease, say), then no more.
    const owner = 'c'.repeat(64);
    await addresses.bind(many(1, 5), 'metal-7', owner);
    await addresses.bind(many(1, 8), 'metal-7', owner);
    await addresses.bind(many(1, 8), 'metal-7', owner); // again: nothing new to hold
    expect(await failure(addresses.bind(['10.42.5.100'], 'metal-7', owner))).toMatchObject({
      kind: 'denied',
      reason: 'address',
      message: expect.stringMatching(
        new RegExp(
          `^this machine already holds 8 addresses \\(10\\.42\\.5\\.1, [0-9., ]+\\); to give it another, delete one of ConfigMaps ${ns.name}/constellation-machine-address-[0-9a-f]{32}-0 to -7 \\(each names its address\\) and that address's record$`,
        ),
      ) as unknown,
    });
    expect(await recorded('10.42.5.100')).toBe(false);
  });

  it('gives concurrent asks of one machine for new addresses a slot each', async () => {
    const owner = 'f'.repeat(64);
    const ips = ['10.42.6.1', '10.42.6.2', '10.42.6.3'];
    await Promise.all(ips.map((ip) => addresses.bind([ip], 'metal-8', owner)));
    const slots = [...(await configMapsIn(ns.admin, ns.name))].filter(([name]) =>
      name.startsWith(machineAddressSlotName(owner, 0).slice(0, -2)),
    );
    expect(slots.map(([, data]) => data['address']).sort()).toEqual(ips);
    expect((await Promise.all(ips.map(recorded))).every(Boolean)).toBe(true);
  });

  it('checks without writing', async () => {
    await addresses.check(['10.42.2.1'], A);
    expect(await recorded('10.42.2.1')).toBe(false);
    await addresses.bind(['10.42.2.1'], 'metal-3', A);
    expect(await failure(addresses.check(['10.42.2.1'], B))).toMatchObject({
      message: heldBy('10.42.2.1', A, 'metal-3'),
    });
  });

  it('refuses retryably, in one line, when the API server sheds its requests', async () => {
    // kube-apiserver's answer beyond its in-flight limit, played by a relay in front of it.
    const relay = await sharedApiRelay();
    try {
      relay.throttle(() => true);
      const shed = new NodeAddressBindings({ core: coreWithToken(relay.url, ns.token), namespace: ns.name });
      const err = await failure(shed.bind(['10.42.3.1'], 'metal-4', A));
      expect(err).toBeInstanceOf(Refusal);
      expect(err).toMatchObject({
        kind: 'unavailable',
        message:
          'could not read or record the node-address binding: HTTP 429: Too many requests, please try again later.',
      });
      expect(relay.requests).toHaveLength(1); // refused at the first answer, no retry storm
    } finally {
      await relay.close();
    }
  });

  it('refuses an address another machine took between the check and the record (another replica)', async () => {
    // Played just before this machine's first record is written: a peer records the address first.
    const racing = coreWithPeerBeforeFirstPost(ns.token, async () => {
      await ns.admin.createNamespacedConfigMap({
        namespace: ns.name,
        body: {
          metadata: { name: nodeAddressBindingName('10.42.4.1') },
          data: { ekPublicKeyHash: B, nodeName: 'metal-6', address: '10.42.4.1' },
        },
      });
    });
    const bindings = new NodeAddressBindings({ core: racing, namespace: ns.name });
    expect(await failure(bindings.bind(['10.42.4.1'], 'metal-5', A))).toMatchObject({
      kind: 'denied',
      message: heldBy('10.42.4.1', B, 'metal-6'),
    });
  });
});
