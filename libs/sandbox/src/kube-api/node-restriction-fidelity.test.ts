import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiFailure } from '../testing/api-failure.js';
import { resourceType, startTestCluster } from './test-cluster.fixture.js';
import type { TestCluster } from './test-cluster.fixture.js';

/*
 * Fidelity audit: what a kubelet (system:node:<name> in system:nodes) may do to Nodes and node
 * Leases. kube-apiserver runs --authorization-mode=Node,RBAC and the NodeRestriction admission
 * plugin (kubeadm enables it: --enable-admission-plugins=NodeRestriction); the stand-in mirrored the
 * authorizer's name checks but not the admission plugin's label, taint and lease-name rules until a
 * fidelity audit found it (kube-api/node-restriction.ts now does).
 */

let cluster: TestCluster;

async function kubeletClients(name: string): Promise<{ core: k8s.CoreV1Api; coordination: k8s.CoordinationV1Api }> {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(
    await cluster.writeKubeconfig(name, { client: await cluster.issueClient(`system:node:${name}`, ['system:nodes']) }),
  );
  return { core: kc.makeApiClient(k8s.CoreV1Api), coordination: kc.makeApiClient(k8s.CoordinationV1Api) };
}

const mergePatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

beforeAll(async () => {
  cluster = await startTestCluster();
  // A control-plane Node as kubeadm's mark-control-plane phase leaves it (admin credentials).
  cluster.api.store.create(resourceType('nodes'), undefined, {
    metadata: { name: 'control-plane-1', labels: { 'node-role.kubernetes.io/control-plane': '' } },
    spec: { taints: [{ key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' }] },
  });
});

afterAll(async () => {
  await cluster.close();
});

describe('NodeRestriction admission (plugin/pkg/admission/noderestriction/admission.go admitNode)', () => {
  it('a kubelet may not register its Node with a node-role.kubernetes.io label', async () => {
    // admitNode, admission.Create: getForbiddenLabels(getModifiedLabels(node.Labels, nil)) forbids
    // any kubernetes.io / k8s.io label that kubeletapis.IsKubeletLabel does not allow
    // (node-role.kubernetes.io/* is not one) => admission.NewForbidden(a, "node %q is not allowed
    // to set the following labels: %s"): 403 Forbidden.
    const { core } = await kubeletClients('worker-7');
    const failure = await apiFailure(
      core.createNode({
        body: { metadata: { name: 'worker-7', labels: { 'node-role.kubernetes.io/control-plane': '' } } },
      }),
    );
    expect(failure.code).toBe(403);
    expect(failure.reason).toBe('Forbidden');
    expect(failure.message).toContain(
      'node "worker-7" is not allowed to set the following labels: node-role.kubernetes.io/control-plane',
    );
  });

  it('a kubelet may not register its Node with a node-restriction.kubernetes.io label', async () => {
    // getForbiddenLabels: namespace == v1.LabelNamespaceNodeRestriction ("node-restriction.kubernetes.io").
    const { core } = await kubeletClients('worker-8');
    const failure = await apiFailure(
      core.createNode({
        body: { metadata: { name: 'worker-8', labels: { 'node-restriction.kubernetes.io/attested': 'true' } } },
      }),
    );
    expect(failure.code).toBe(403);
    expect(failure.message).toContain(
      'node "worker-8" is not allowed to set the following labels: node-restriction.kubernetes.io/attested',
    );
  });

  it('a kubelet may not remove the control-plane taint from its own Node', async () => {
    // admitNode, admission.Update: !apiequality.Semantic.DeepEqual(node.Spec.Taints, oldNode.Spec.Taints)
    // => admission.NewForbidden(a, "node %q is not allowed to modify taints").
    const { core } = await kubeletClients('control-plane-1');
    const failure = await apiFailure(
      core.patchNode({ name: 'control-plane-1', body: { spec: { taints: null } } }, mergePatch),
    );
    expect(failure.code).toBe(403);
    expect(failure.message).toContain('node "control-plane-1" is not allowed to modify taints');
  });

  it('a kubelet may not remove the node-role label from its own Node', async () => {
    // admitNode, admission.Update: getForbiddenLabels(getModifiedLabels(node.Labels, oldNode.Labels))
    // => admission.NewForbidden(a, "is not allowed to modify labels: %s").
    const { core } = await kubeletClients('control-plane-1');
    const failure = await apiFailure(
      core.patchNode(
        { name: 'control-plane-1', body: { metadata: { labels: { 'node-role.kubernetes.io/control-plane': null } } } },
        mergePatch,
      ),
    );
    expect(failure.code).toBe(403);
    expect(failure.message).toContain('is not allowed to modify labels: node-role.kubernetes.io/control-plane');
  });
});

describe('NodeRestriction admission for node Leases (admitLease)', () => {
  it("a kubelet may not create another node's Lease in kube-node-lease", async () => {
    // node_authorizer.go authorizeLease skips the name check for create ("the noderestriction
    // admission plugin is capable of performing this check at create time"); admission.go
    // admitLease, admission.Create: lease.Name != nodeName => admission.NewForbidden(a,
    // "can only access node lease with the same name as the requesting node").
    const { coordination } = await kubeletClients('worker-9');
    const failure = await apiFailure(
      coordination.createNamespacedLease({
        namespace: 'kube-node-lease',
        body: { metadata: { name: 'control-plane-1' }, spec: { holderIdentity: 'control-plane-1' } },
      }),
    );
    expect(failure.code).toBe(403);
    expect(failure.message).toContain('can only access node lease with the same name as the requesting node');
  });
});
