import { Refusal } from '@constellation/errors';
import type { KubeApiServer } from '@constellation/sandbox';
import { ADMIN_TOKEN, USER_TOKEN, coreApiWithToken, startTokenApiServer } from '@constellation/sandbox/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONFIG_MAPS, failure, recordedIn } from './claim-records.fixture.js';
import { NodeAddressBindings, machineAddressSlotName, nodeAddressBindingName } from './node-address-binding.js';

const A = 'a'.repeat(64);
const B = 'b'.repeat(64);
let api: KubeApiServer;
let addresses: NodeAddressBindings;

function bindingsAs(token: string): NodeAddressBindings {
  return new NodeAddressBindings({ core: coreApiWithToken(api, token) });
}

beforeAll(async () => {
  api = await startTokenApiServer();
  addresses = bindingsAs(ADMIN_TOKEN);
});

afterAll(async () => {
  await api.close();
});

const recorded = (ip: string): boolean => recordedIn(api, nodeAddressBindingName(ip));
const heldBy = (ip: string, owner: string, node: string): string =>
  `address ${ip} belongs to another machine (EK sha256:${owner}, node "${node}"); to give it to this one, delete ConfigMap kube-system/${nodeAddressBindingName(ip)}`;

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
    expect(recorded('10.42.1.9')).toBe(false); // the refused ask claimed none of its addresses
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
    expect(many(1, 9).some(recorded)).toBe(false);
    // Eight over several asks (a new lease, say), then no more.
    const owner = 'c'.repeat(64);
    await addresses.bind(many(1, 5), 'metal-7', owner);
    await addresses.bind(many(1, 8), 'metal-7', owner);
    await addresses.bind(many(1, 8), 'metal-7', owner); // again: nothing new to hold
    expect(await failure(addresses.bind(['10.42.5.100'], 'metal-7', owner))).toMatchObject({
      kind: 'denied',
      reason: 'address',
      message: expect.stringMatching(
        /^this machine already holds 8 addresses \(10\.42\.5\.1, [0-9., ]+\); to give it another, delete one of ConfigMaps kube-system\/constellation-machine-address-[0-9a-f]{32}-0 to -7 \(each names its address\) and that address's record$/,
      ) as unknown,
    });
    expect(recorded('10.42.5.100')).toBe(false);
  });

  it('gives concurrent asks of one machine for new addresses a slot each', async () => {
    const owner = 'f'.repeat(64);
    const ips = ['10.42.6.1', '10.42.6.2', '10.42.6.3'];
    await Promise.all(ips.map((ip) => addresses.bind([ip], 'metal-8', owner)));
    const slots = api.store
      .list(CONFIG_MAPS, 'kube-system')
      .items.map((c) => c as { metadata?: { name?: string }; data?: Record<string, string> })
      .filter((c) => c.metadata?.name?.startsWith(machineAddressSlotName(owner, 0).slice(0, -2)) === true);
    expect(slots.map((c) => c.data?.['address']).sort()).toEqual(ips);
    expect(ips.every(recorded)).toBe(true);
  });

  it('checks without writing', async () => {
    await addresses.check(['10.42.2.1'], A);
    expect(recorded('10.42.2.1')).toBe(false);
    await addresses.bind(['10.42.2.1'], 'metal-3', A);
    expect(await failure(addresses.check(['10.42.2.1'], B))).toMatchObject({
      message: heldBy('10.42.2.1', A, 'metal-3'),
    });
  });

  it('refuses retryably, in one line, when the API server sheds its requests', async () => {
    // kube-apiserver never sheds system:masters' requests: this client is a plain user.
    api.throttle(() => true);
    try {
      const err = await failure(bindingsAs(USER_TOKEN).bind(['10.42.3.1'], 'metal-4', A));
      expect(err).toBeInstanceOf(Refusal);
      expect(err).toMatchObject({
        kind: 'unavailable',
        message:
          'could not read or record the node-address binding: HTTP 429: Too many requests, please try again later.',
      });
    } finally {
      api.throttle(undefined);
    }
  });

  it('refuses an address another machine took between the check and the record (another replica)', async () => {
    // Played at the moment this machine's own record is written: a peer records the address first.
    api.throttle((request) => {
      if (request.method === 'POST' && !recorded('10.42.4.1')) {
        api.store.create(CONFIG_MAPS, 'kube-system', {
          metadata: { name: nodeAddressBindingName('10.42.4.1') },
          data: { ekPublicKeyHash: B, nodeName: 'metal-6', address: '10.42.4.1' },
        });
      }
      return false;
    });
    try {
      expect(await failure(addresses.bind(['10.42.4.1'], 'metal-5', A))).toMatchObject({
        kind: 'denied',
        message: heldBy('10.42.4.1', B, 'metal-6'),
      });
    } finally {
      api.throttle(undefined);
    }
  });
});
