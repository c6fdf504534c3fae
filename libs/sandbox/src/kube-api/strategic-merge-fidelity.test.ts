import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../kube-object-store.js';
import { kubectl, resourceType, startTestCluster } from './test-cluster.fixture.js';
import type { TestCluster } from './test-cluster.fixture.js';

// `kubectl patch` sends application/strategic-merge-patch+json unless told otherwise; kube-apiserver
// applies it with staging/src/k8s.io/apimachinery/pkg/util/strategicpatch/patch.go
// StrategicMergeMapPatch and core/v1 NodeStatus's tags (staging/src/k8s.io/api/core/v1/types.go):
// `conditions` and `addresses` have patchStrategy merge, patchMergeKey type.

let cluster: TestCluster;
let admin: string;

function worker(name: string): KubeObject {
  return {
    metadata: { name, finalizers: ['example.com/a'] },
    status: {
      conditions: [
        { type: 'MemoryPressure', status: 'False', reason: 'KubeletHasSufficientMemory' },
        { type: 'Ready', status: 'True', reason: 'KubeletReady' },
      ],
      addresses: [
        { type: 'InternalIP', address: '10.9.0.2' },
        { type: 'ExternalIP', address: '203.0.113.7' },
      ],
    },
  };
}

beforeAll(async () => {
  cluster = await startTestCluster();
  for (const name of ['worker-1', 'worker-2', 'worker-3', 'worker-4'])
    cluster.api.store.create(resourceType('nodes'), undefined, worker(name));
  admin = await cluster.writeKubeconfig('kubernetes-admin', {
    client: await cluster.issueClient('kubernetes-admin', ['kubeadm:cluster-admins']),
  });
});

afterAll(async () => {
  await cluster.close();
});

async function patchStatus(node: string, patch: unknown): Promise<{ code: number; stdout: string; stderr: string }> {
  const result = await kubectl(cluster, admin, [
    'patch',
    'node',
    node,
    '--subresource=status',
    '-p',
    JSON.stringify(patch),
  ]);
  return { code: result.code ?? -1, stdout: result.stdout.toString().trim(), stderr: result.stderr.trim() };
}

const stored = (name: string): KubeObject => cluster.api.store.get(resourceType('nodes'), undefined, name);

describe('kubectl patch (strategic merge) against the stand-in, as against kube-apiserver', () => {
  it('a condition patched by type merges into that condition; the others stay (mergeSliceWithoutSpecialElements)', async () => {
    const result = await patchStatus('worker-1', { status: { conditions: [{ type: 'Ready', status: 'False' }] } });
    expect(result).toMatchObject({ code: 0, stdout: 'node/worker-1 patched' });
    expect(stored('worker-1')['status']).toMatchObject({
      conditions: [
        { type: 'MemoryPressure', status: 'False', reason: 'KubeletHasSufficientMemory' },
        { type: 'Ready', status: 'False', reason: 'KubeletReady' },
      ],
    });
  });

  it('`$patch: delete` removes the address of that type only (mergeSliceWithSpecialElements)', async () => {
    const result = await patchStatus('worker-2', { status: { addresses: [{ type: 'ExternalIP', $patch: 'delete' }] } });
    expect(result).toMatchObject({ code: 0, stdout: 'node/worker-2 patched' });
    expect(stored('worker-2')['status']).toMatchObject({ addresses: [{ type: 'InternalIP', address: '10.9.0.2' }] });
  });

  it("an element without its merge key: kubectl prints patch.go's ErrNoMergeKey (a 500 with no reason)", async () => {
    const result = await patchStatus('worker-3', { status: { conditions: [{ status: 'True' }] } });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('Error from server: map: map[status:True] does not contain declared merge key: type');
    expect(stored('worker-3')['status']).toEqual(worker('worker-3')['status']);
  });

  it('finalizers (patchStrategy merge) are a set: a patch adds to them, $deleteFromPrimitiveList takes out', async () => {
    const add = await kubectl(cluster, admin, [
      'patch',
      'node',
      'worker-4',
      '-p',
      '{"metadata":{"finalizers":["example.com/b"]}}',
    ]);
    expect(add.stderr).toBe('');
    expect(stored('worker-4').metadata['finalizers']).toEqual(['example.com/b', 'example.com/a']);
    const remove = await kubectl(cluster, admin, [
      'patch',
      'node',
      'worker-4',
      '-p',
      '{"metadata":{"$deleteFromPrimitiveList/finalizers":["example.com/a"]}}',
    ]);
    expect(remove.stderr).toBe('');
    expect(stored('worker-4').metadata['finalizers']).toEqual(['example.com/b']);
  });
});
