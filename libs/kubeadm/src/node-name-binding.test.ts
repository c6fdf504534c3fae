import { Refusal } from '@constellation/errors';
import { sharedKubernetes } from '@constellation/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  coreWithPeerBeforeFirstPost,
  coreWithToken,
  failure,
  recordedIn,
  recordsNamespace,
  sharedApiRelay,
} from './claim-records.fixture.js';
import type { RecordsNamespace } from './claim-records.fixture.js';
import { NodeNameBindings, machineNameBindingName, nodeNameBindingName } from './node-name-binding.js';

// Against the run's real API server, in a namespace of this file's own, as a service account that
// may get and create ConfigMaps there.

const A = 'a'.repeat(64);
const B = 'b'.repeat(64);
let ns: RecordsNamespace;
let names: NodeNameBindings;

beforeAll(async () => {
  ns = await recordsNamespace('node-name-binding');
  names = new NodeNameBindings({ core: coreWithToken(sharedKubernetes().apiServerUrl, ns.token), namespace: ns.name });
});

afterAll(async () => {
  await ns.delete();
});

const recorded = (name: string): Promise<boolean> => recordedIn(ns.admin, ns.name, name);

describe('NodeNameBindings', () => {
  it('gives a name to the first machine and keeps each machine to its one name', async () => {
    await names.bind('metal-1', A);
    await names.bind('metal-1', A); // again: the same pair
    expect(await failure(names.bind('metal-1', B))).toMatchObject({
      kind: 'denied',
      reason: 'name',
      message: `node name "metal-1" belongs to another machine (EK sha256:${A}); to give it to this one, delete ConfigMap ${ns.name}/${nodeNameBindingName('metal-1')}`,
    });
    expect(await recorded(machineNameBindingName(B))).toBe(false); // the refused ask claimed nothing
    expect(await failure(names.bind('metal-2', A))).toMatchObject({
      kind: 'denied',
      reason: 'name',
      message: expect.stringContaining(
        'this machine joined the cluster as "metal-1" and asked to join as "metal-2"',
      ) as unknown,
    });
    expect(await recorded(nodeNameBindingName('metal-2'))).toBe(false);
  });

  it('refuses retryably, in one line, when the API server sheds its requests', async () => {
    // kube-apiserver's answer beyond its in-flight limit, played by a relay in front of it.
    const relay = await sharedApiRelay();
    try {
      relay.throttle(() => true);
      const shed = new NodeNameBindings({ core: coreWithToken(relay.url, ns.token), namespace: ns.name });
      const err = await failure(shed.bind('metal-3', 'c'.repeat(64)));
      expect(err).toBeInstanceOf(Refusal);
      expect(err).toMatchObject({
        kind: 'unavailable',
        message: 'could not read or record the node-name binding: HTTP 429: Too many requests, please try again later.',
      });
      expect(relay.requests).toHaveLength(1); // refused at the first answer, no retry storm
    } finally {
      await relay.close();
    }
  });

  it('refuses a name another machine took between the check and the record (another replica)', async () => {
    const d = 'd'.repeat(64);
    // Played just before this machine's first record is written: a peer records the name first.
    const racing = coreWithPeerBeforeFirstPost(ns.token, async () => {
      await ns.admin.createNamespacedConfigMap({
        namespace: ns.name,
        body: {
          metadata: { name: nodeNameBindingName('metal-4') },
          data: { ekPublicKeyHash: d, nodeName: 'metal-4' },
        },
      });
    });
    const bindings = new NodeNameBindings({ core: racing, namespace: ns.name });
    expect(await failure(bindings.bind('metal-4', 'e'.repeat(64)))).toMatchObject({
      kind: 'denied',
      message: expect.stringContaining(`node name "metal-4" belongs to another machine (EK sha256:${d})`) as unknown,
    });
  });
});
