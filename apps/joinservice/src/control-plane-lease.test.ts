import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { createTempDir } from '@constellation/testing';
import type { TempDir } from '@constellation/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiServerClock } from './api-server-clock.js';
import { ControlPlaneLease } from './control-plane-lease.js';
import { startJoinServiceCluster } from './join-service-cluster.fixture.js';
import type { JoinServiceCluster } from './join-service-cluster.fixture.js';
import { CLUSTER } from './join-service.fixture.js';
import { refusalOf } from './refusal.fixture.js';

// The Lease's acquireTime/renewTime are metav1.MicroTime (k8s.io/apimachinery/pkg/apis/meta/v1/
// micro_time.go): kube-apiserver stores them as RFC3339Micro, six fractional digits. The lease is
// written by the JoinService's ServiceAccount with its production RBAC, on a control plane of this
// file's own (the lease lives in kube-system under a fixed name).

let dir: TempDir;
let cluster: JoinServiceCluster;
let lease: ControlPlaneLease;

/** This machine's clock, `offsetMs` off the API server's (it runs on this machine's clock). */
function clockOff(offsetMs: number): ApiServerClock {
  return new ApiServerClock({ maxSkewMs: 5_000, retryAfterMs: 1_000, now: () => Date.now() + offsetMs });
}

beforeAll(async () => {
  dir = await createTempDir('constellation-control-plane-lease-');
  cluster = await startJoinServiceCluster(join(dir.path, 'control-plane'), { cluster: CLUSTER });
  const kubeconfig = join(dir.path, 'kubeconfig');
  await cluster.writeJoinServiceKubeconfig(kubeconfig);
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(kubeconfig);
  lease = new ControlPlaneLease({
    coordination: kc.makeApiClient(k8s.CoordinationV1Api),
    core: kc.makeApiClient(k8s.CoreV1Api),
    holdMs: 60_000,
    clock: clockOff(0),
  });
});

afterAll(async () => {
  await cluster.stop();
  await dir.remove();
});

/** The Lease's times as kube-apiserver serves them (kubectl's JSON, not a client's parsed dates). */
async function storedTimes(): Promise<{ acquireTime?: string; renewTime?: string }> {
  const stored = await cluster.admin.json<{ spec: { acquireTime?: string; renewTime?: string } }>([
    '-n',
    'kube-system',
    'get',
    'lease',
    'constellation-control-plane-join',
  ]);
  return stored.spec;
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
    const read = await cluster.coordination.readNamespacedLease({
      namespace: 'kube-system',
      name: 'constellation-control-plane-join',
    });
    expect(read.spec?.holderIdentity).toBe('cp-2');
    expect((await storedTimes()).renewTime).toBe('2030-05-06T08:00:00.456000Z');
  });
});

// Replicas judge the lease's expiry with their own clocks: one whose clock leads takes over a lease
// a peer's control plane still holds (two control planes join etcd at once); one whose clock lags
// writes a renewTime its peers read as long past. Each lease here has a name of its own, which the
// service's Role does not cover: these replicas write as system:masters.
describe('control-plane join lease on a replica whose clock disagrees with the API server', () => {
  function leaseNamed(name: string, offsetMs: number): ControlPlaneLease {
    return new ControlPlaneLease({
      coordination: cluster.coordination,
      core: cluster.core,
      holdMs: 60_000,
      name,
      clock: clockOff(offsetMs),
    });
  }

  async function holder(name: string): Promise<string | undefined> {
    try {
      return (await cluster.coordination.readNamespacedLease({ namespace: 'kube-system', name })).spec?.holderIdentity;
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
