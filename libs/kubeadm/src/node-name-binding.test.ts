import { Refusal } from '@constellation/errors';
import type { KubeApiServer } from '@constellation/sandbox';
import { ADMIN_TOKEN, USER_TOKEN, coreApiWithToken, startTokenApiServer } from '@constellation/sandbox/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONFIG_MAPS, failure, recordedIn } from './claim-records.fixture.js';
import { NodeNameBindings, machineNameBindingName, nodeNameBindingName } from './node-name-binding.js';

const A = 'a'.repeat(64);
const B = 'b'.repeat(64);
let api: KubeApiServer;
let names: NodeNameBindings;

function bindingsAs(token: string): NodeNameBindings {
  return new NodeNameBindings({ core: coreApiWithToken(api, token) });
}

beforeAll(async () => {
  api = await startTokenApiServer();
  names = bindingsAs(ADMIN_TOKEN);
});

afterAll(async () => {
  await api.close();
});

const recorded = (name: string): boolean => recordedIn(api, name);

describe('NodeNameBindings', () => {
  it('gives a name to the first machine and keeps each machine to its one name', async () => {
    await names.bind('metal-1', A);
    await names.bind('metal-1', A); // again: the same pair
    expect(await failure(names.bind('metal-1', B))).toMatchObject({
      kind: 'denied',
      reason: 'name',
      message: `node name "metal-1" belongs to another machine (EK sha256:${A}); to give it to this one, delete ConfigMap kube-system/${nodeNameBindingName('metal-1')}`,
    });
    expect(recorded(machineNameBindingName(B))).toBe(false); // the refused ask claimed nothing
    expect(await failure(names.bind('metal-2', A))).toMatchObject({
      kind: 'denied',
      reason: 'name',
      message: expect.stringContaining(
        'this machine joined the cluster as "metal-1" and asked to join as "metal-2"',
      ) as unknown,
    });
    expect(recorded(nodeNameBindingName('metal-2'))).toBe(false);
  });

  it('refuses retryably, in one line, when the API server sheds its requests', async () => {
    // kube-apiserver never sheds system:masters' requests: this client is a plain user.
    api.throttle(() => true);
    try {
      const err = await failure(bindingsAs(USER_TOKEN).bind('metal-3', 'c'.repeat(64)));
      expect(err).toBeInstanceOf(Refusal);
      expect(err).toMatchObject({
        kind: 'unavailable',
        message: 'could not read or record the node-name binding: HTTP 429: Too many requests, please try again later.',
      });
    } finally {
      api.throttle(undefined);
    }
  });

  it('refuses a name another machine took between the check and the record (another replica)', async () => {
    const d = 'd'.repeat(64);
    // Played at the moment this machine's own record is written: a peer records the name first.
    api.throttle((request) => {
      if (request.method === 'POST' && !recorded(nodeNameBindingName('metal-4'))) {
        api.store.create(CONFIG_MAPS, 'kube-system', {
          metadata: { name: nodeNameBindingName('metal-4') },
          data: { ekPublicKeyHash: d, nodeName: 'metal-4' },
        });
      }
      return false;
    });
    try {
      expect(await failure(names.bind('metal-4', 'e'.repeat(64)))).toMatchObject({
        kind: 'denied',
        message: expect.stringContaining(`node name "metal-4" belongs to another machine (EK sha256:${d})`) as unknown,
      });
    } finally {
      api.throttle(undefined);
    }
  });
});
