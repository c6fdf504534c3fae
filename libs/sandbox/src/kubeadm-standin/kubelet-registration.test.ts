import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resourceType, startTestCluster } from '../kube-api/test-cluster.fixture.js';
import type { TestCluster } from '../kube-api/test-cluster.fixture.js';
import { registerNode } from './kubelet-registration.js';

let cluster: TestCluster;

beforeAll(async () => {
  cluster = await startTestCluster();
});

afterAll(async () => {
  await cluster.close();
});

describe('the kubelet registers its Node', () => {
  it('with the --register-with-taints a worker join passes it (cmd/kubeadm/app/phases/kubelet/flags.go, registerTaintsUsingFlags)', async () => {
    // pkg/kubelet/kubelet_node_status.go initialNode puts registerWithTaints on the new Node;
    // NodeRestriction lets a kubelet set taints when it creates its Node, not change them later.
    const kubelet = await cluster.issueClient('system:node:worker-t', ['system:nodes']);
    const taints = [{ key: 'dedicated', value: 'batch', effect: 'NoSchedule' }];
    const credential = { cert: kubelet.certPem, key: kubelet.keyPem };
    await registerNode(cluster.api.url, cluster.ca.certificatePem, credential, 'worker-t', undefined, taints);
    const node = cluster.api.store.get(resourceType('nodes'), undefined, 'worker-t');
    expect((node['spec'] as { taints?: unknown }).taints).toEqual(taints);
  });
});
