import * as k8s from '@kubernetes/client-node';
import { KubeApiServer } from '@constellation/sandbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ControlPlaneLease } from './control-plane-lease.js';

// The Lease's acquireTime/renewTime are metav1.MicroTime (k8s.io/apimachinery/pkg/apis/meta/v1/
// micro_time.go): kube-apiserver only decodes RFC3339Micro, six fractional digits. The API
// stand-in refuses anything else with the real server's 400, so these writes must carry six.

let api: KubeApiServer;
let lease: ControlPlaneLease;
let coordination: k8s.CoordinationV1Api;

beforeAll(async () => {
  api = await KubeApiServer.start();
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: api.url, skipTLSVerify: true }],
    users: [{ name: 'u', token: 't' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  coordination = kc.makeApiClient(k8s.CoordinationV1Api);
  lease = new ControlPlaneLease({ coordination, core: kc.makeApiClient(k8s.CoreV1Api), holdMs: 60_000 });
});

afterAll(async () => {
  await api.close();
});

async function storedTimes(): Promise<{ acquireTime?: string; renewTime?: string }> {
  const res = await fetch(
    `${api.url}/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/constellation-control-plane-join`,
  );
  return ((await res.json()) as { spec: { acquireTime?: string; renewTime?: string } }).spec;
}

describe('control-plane join lease', () => {
  it('is created with MicroTime (six fractional digits) acquireTime and renewTime', async () => {
    const now = new Date('2030-05-06T07:08:09.123Z');
    await lease.acquire('cp-1', now);
    expect(await storedTimes()).toMatchObject({
      acquireTime: '2030-05-06T07:08:09.123000Z',
      renewTime: '2030-05-06T07:08:09.123000Z',
    });
  });

  it('is taken over after expiry with a replace that also carries MicroTime', async () => {
    const later = new Date('2030-05-06T08:00:00.456Z');
    await lease.acquire('cp-2', later);
    const read = await coordination.readNamespacedLease({
      namespace: 'kube-system',
      name: 'constellation-control-plane-join',
    });
    expect(read.spec?.holderIdentity).toBe('cp-2');
    expect((await storedTimes()).renewTime).toBe('2030-05-06T08:00:00.456000Z');
  });
});
