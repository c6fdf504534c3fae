import * as k8s from '@kubernetes/client-node';
import { KubeApiServer } from '@constellation/sandbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiServerClock } from './api-server-clock.js';
import { ControlPlaneLease } from './control-plane-lease.js';
import { refusalOf } from './refusal.fixture.js';

// The Lease's acquireTime/renewTime are metav1.MicroTime (k8s.io/apimachinery/pkg/apis/meta/v1/
// micro_time.go): kube-apiserver only decodes RFC3339Micro, six fractional digits. The API
// stand-in refuses anything else with the real server's 400, so these writes must carry six.

let api: KubeApiServer;
let lease: ControlPlaneLease;
let coordination: k8s.CoordinationV1Api;
let core: k8s.CoreV1Api;

/** This machine's clock, `offsetMs` off the API server's (the stand-in runs on the real clock). */
function clockOff(offsetMs: number): ApiServerClock {
  return new ApiServerClock({ maxSkewMs: 5_000, retryAfterMs: 1_000, now: () => Date.now() + offsetMs });
}

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
  core = kc.makeApiClient(k8s.CoreV1Api);
  lease = new ControlPlaneLease({ coordination, core, holdMs: 60_000, clock: clockOff(0) });
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

// Replicas judge the lease's expiry with their own clocks: one whose clock leads takes over a lease
// a peer's control plane still holds (two control planes join etcd at once); one whose clock lags
// writes a renewTime its peers read as long past. Each lease here has a name of its own.
describe('control-plane join lease on a replica whose clock disagrees with the API server', () => {
  function leaseNamed(name: string, offsetMs: number): ControlPlaneLease {
    return new ControlPlaneLease({ coordination, core, holdMs: 60_000, name, clock: clockOff(offsetMs) });
  }

  async function holder(name: string): Promise<string | undefined> {
    try {
      return (await coordination.readNamespacedLease({ namespace: 'kube-system', name })).spec?.holderIdentity;
    } catch (err) {
      if (err instanceof k8s.ApiException && err.code === 404) return undefined;
      throw err;
    }
  }

  it('a leading replica does not take over the lease a peer gave a control plane a moment ago', async () => {
    await leaseNamed('lease-leading', 0).acquire('cp-a');
    const refused = await refusalOf(leaseNamed('lease-leading', 120_000).acquire('cp-b'));
    expect(refused).toMatchObject({ kind: 'unavailable', reason: 'clock-skew', retryAfterMs: 1_000 });
    expect(refused.message).toMatch(
      /^this JoinService's clock is at least 11\d s ahead of the Kubernetes API server's/,
    );
    expect(await holder('lease-leading')).toBe('cp-a');
  });

  it('a lagging replica leaves no lease behind whose renewTime its peers read as long past', async () => {
    const refused = await refusalOf(leaseNamed('lease-lagging', -120_000).acquire('cp-c'));
    expect(refused).toMatchObject({ kind: 'unavailable', reason: 'clock-skew' });
    expect(refused.message).toMatch(
      /^this JoinService's clock is at least 1[12]\d s behind the Kubernetes API server's/,
    );
    expect(await holder('lease-lagging')).toBeUndefined();
  });
});
