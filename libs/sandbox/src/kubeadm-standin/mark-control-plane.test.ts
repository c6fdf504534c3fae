import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resourceType, startTestCluster } from '../kube-api/test-cluster.fixture.js';
import type { TestCluster } from '../kube-api/test-cluster.fixture.js';
import { CONTROL_PLANE_TAINT } from './config-defaults.js';
import type { Credential } from './https-json.js';
import { registerNode } from './kubelet-registration.js';
import { markControlPlane, taintString } from './mark-control-plane.js';

/*
 * The mark-control-plane phase against the API stand-in, as
 * cmd/kubeadm/app/phases/markcontrolplane/markcontrolplane.go (MarkControlPlane,
 * markControlPlaneNode) and cmd/kubeadm/app/util/apiclient/idempotency.go (PatchNode,
 * PatchNodeOnce) do it.
 */

let cluster: TestCluster;
let admin: Credential;

beforeAll(async () => {
  cluster = await startTestCluster();
  const identity = await cluster.issueClient('kubernetes-admin', ['system:masters']);
  admin = { cert: identity.certPem, key: identity.keyPem };
});

afterAll(async () => {
  await cluster.close();
});

const nodes = resourceType('nodes');
const mark = (
  name: string,
  taints: readonly { key: string; value?: string; effect: string }[],
  timeoutMs = 5_000,
  lines: string[] = [],
): Promise<void> =>
  markControlPlane(cluster.api.url, cluster.ca.certificatePem, admin, name, taints, timeoutMs, (line) => {
    lines.push(line);
  });
const nodeSpec = (name: string): { taints?: unknown } => cluster.api.store.get(nodes, undefined, name)['spec'] ?? {};

describe('MarkControlPlane', () => {
  it('labels the Node and prints the labels and taints as kubeadm does', async () => {
    cluster.api.store.create(nodes, undefined, {
      metadata: { name: 'cp-a', labels: { 'kubernetes.io/hostname': 'cp-a' } },
    });
    const lines: string[] = [];
    await mark('cp-a', [CONTROL_PLANE_TAINT], 5_000, lines);
    const node = cluster.api.store.get(nodes, undefined, 'cp-a');
    expect(node.metadata.labels).toMatchObject({
      'node-role.kubernetes.io/control-plane': '',
      'node.kubernetes.io/exclude-from-external-load-balancers': '',
    });
    expect(nodeSpec('cp-a').taints).toEqual([CONTROL_PLANE_TAINT]);
    // fmt.Printf("... by adding the labels: %v\n", labelsToAdd), then the taints' v1.Taint.ToString.
    expect(lines).toEqual([
      '[mark-control-plane] Marking the node cp-a as control-plane by adding the labels: [node-role.kubernetes.io/control-plane node.kubernetes.io/exclude-from-external-load-balancers]',
      '[mark-control-plane] Marking the node cp-a as control-plane by adding the taints [node-role.kubernetes.io/control-plane:NoSchedule]',
    ]);
  });

  it('markControlPlaneNode: the configured taints first, then the Node’s own that are not among them; none configured adds none', async () => {
    const own = { key: 'example.com/gpu', value: 'a100', effect: 'NoSchedule' };
    cluster.api.store.create(nodes, undefined, {
      metadata: { name: 'cp-b', labels: { 'kubernetes.io/hostname': 'cp-b' } },
      spec: { taints: [own, CONTROL_PLANE_TAINT] },
    });
    await mark('cp-b', [CONTROL_PLANE_TAINT]);
    expect(nodeSpec('cp-b').taints).toEqual([CONTROL_PLANE_TAINT, own]);

    // taints: [] in the configuration: the labels only, no taint line, the Node's taints untouched.
    cluster.api.store.create(nodes, undefined, {
      metadata: { name: 'cp-c', labels: { 'kubernetes.io/hostname': 'cp-c' } },
    });
    const lines: string[] = [];
    await mark('cp-c', [], 5_000, lines);
    expect(nodeSpec('cp-c').taints ?? []).toEqual([]);
    expect(lines).toHaveLength(1);
    expect(taintString({ key: 'k', value: 'v', effect: '' })).toBe('k=v:');
  });

  it('PatchNode waits for the Node to be registered (and labelled kubernetes.io/hostname)', async () => {
    const kubelet = await cluster.issueClient('system:node:cp-d', ['system:nodes']);
    const marked = mark('cp-d', [CONTROL_PLANE_TAINT], 10_000);
    await new Promise((resolve) => setTimeout(resolve, 700));
    await registerNode(
      cluster.api.url,
      cluster.ca.certificatePem,
      { cert: kubelet.certPem, key: kubelet.keyPem },
      'cp-d',
      undefined,
    );
    await marked;
    expect(nodeSpec('cp-d').taints).toEqual([CONTROL_PLANE_TAINT]);
  });

  it('PatchNode gives up after timeouts.kubernetesAPICall with the last error: the Node not found', async () => {
    await expect(mark('cp-never', [CONTROL_PLANE_TAINT], 1_200)).rejects.toThrow('nodes "cp-never" not found');
  });
});
