import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startIsolatedCluster } from './isolated-cluster.fixture.js';
import type { IsolatedCluster } from './isolated-cluster.fixture.js';

// Issue 50, item 6: a tenant allowed only to create pods in its own namespace mounted `hostPath: /`
// on a worker and read what the node holds (on mini: every node's files and the operator's). The
// init configuration libs/kubeadm generates gives the API server Pod Security `baseline` as the
// default of every namespace but kube-system, as a hardened distribution does. A real API server,
// started from that configuration by real kubeadm; admission refuses at create, no kubelet needed.

let cluster: IsolatedCluster;
let core: k8s.CoreV1Api;

beforeAll(async () => {
  cluster = await startIsolatedCluster();
  core = cluster.admin.makeApiClient(k8s.CoreV1Api);
}, 120_000);

afterAll(async () => {
  await cluster.stop();
}, 60_000);

/** A pod that mounts the node's root file system. */
const hostRootPod = (name: string): k8s.V1Pod => ({
  metadata: { name },
  spec: {
    containers: [
      { name: 'reader', image: 'registry.k8s.io/pause:3.10', volumeMounts: [{ name: 'root', mountPath: '/host' }] },
    ],
    volumes: [{ name: 'root', hostPath: { path: '/' } }],
  },
});

/** A namespace with its default service account (this control plane runs no controller that makes it). */
async function namespace(name: string, labels: Record<string, string> = {}): Promise<void> {
  await core.createNamespace({ body: { metadata: { name, labels } } });
  await core.createNamespacedServiceAccount({ namespace: name, body: { metadata: { name: 'default' } } });
}

async function createError(namespace: string, pod: k8s.V1Pod): Promise<string | undefined> {
  try {
    await core.createNamespacedPod({ namespace, body: pod });
    return undefined;
  } catch (err) {
    const body = (err as { body?: unknown }).body;
    return typeof body === 'string' ? body : JSON.stringify(body ?? String(err));
  }
}

describe('Pod Security: baseline by default, kube-system exempt', () => {
  it("refuses a tenant's pod that mounts the node's root, naming the policy and the volume", async () => {
    await namespace('tenant');
    const refused = await createError('tenant', hostRootPod('read-the-node'));
    expect(refused).toContain('violates PodSecurity \\"baseline:latest\\": hostPath volumes (volume \\"root\\")');
    const privileged = await createError('tenant', {
      metadata: { name: 'privileged' },
      spec: { containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10', securityContext: { privileged: true } }] },
    });
    expect(privileged).toContain('violates PodSecurity \\"baseline:latest\\": privileged (container \\"c\\"');
  });

  it('admits what the cluster itself runs in kube-system, and a namespace its admin labels privileged', async () => {
    await core
      .createNamespacedServiceAccount({ namespace: 'kube-system', body: { metadata: { name: 'default' } } })
      .catch(() => undefined);
    expect(await createError('kube-system', hostRootPod('system-pod'))).toBeUndefined();
    await namespace('node-agents', { 'pod-security.kubernetes.io/enforce': 'privileged' });
    expect(await createError('node-agents', hostRootPod('agent'))).toBeUndefined();
  });
});
