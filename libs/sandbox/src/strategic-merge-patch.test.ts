import { describe, expect, it } from 'vitest';
import { applyPatch, patchFormat } from './kube-api-patch.js';
import { KubeApiError } from './kube-api-status.js';
import type { KubeStatus } from './kube-api-status.js';

// Each rule mirrors staging/src/k8s.io/apimachinery/pkg/util/strategicpatch/patch.go
// (StrategicMergeMapPatch and the function each test names) with the patchStrategy /
// patchMergeKey tags of staging/src/k8s.io/api/core/v1/types.go and
// staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/types.go; the status codes are those of
// interpretStrategicMergePatchError in staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go
// (a sentinel error 400 or 422, any other error passed on: 500 with no reason).

const strategic = (current: unknown, patch: unknown, kind = 'Node'): unknown =>
  applyPatch(current, patch, 'strategic', kind);

function refusal(current: unknown, patch: unknown, kind = 'Node'): KubeStatus {
  try {
    strategic(current, patch, kind);
  } catch (err) {
    if (err instanceof KubeApiError) return err.status;
    throw err;
  }
  throw new Error('the patch was applied');
}

const node = {
  metadata: { name: 'worker-1', finalizers: ['a', 'b'] },
  spec: { podCIDRs: ['10.244.1.0/24'], taints: [{ key: 'dedicated', value: 'db', effect: 'NoSchedule' }] },
  status: {
    conditions: [
      { type: 'MemoryPressure', status: 'False', reason: 'KubeletHasSufficientMemory' },
      { type: 'Ready', status: 'True', reason: 'KubeletReady' },
    ],
    addresses: [
      { type: 'InternalIP', address: '10.9.0.2' },
      { type: 'Hostname', address: 'worker-1' },
      { type: 'ExternalIP', address: '203.0.113.7' },
    ],
  },
};

describe('strategic merge patch: the served kinds list strategies (types.go struct tags)', () => {
  it('patchFormat: application/strategic-merge-patch+json is its own format, not a JSON merge patch', () => {
    expect(patchFormat('application/strategic-merge-patch+json; charset=utf-8')).toBe('strategic');
  });

  it('NodeStatus.conditions (patchMergeKey type): a patched condition merges into its own (mergeSliceWithoutSpecialElements)', () => {
    const patched = strategic(node, { status: { conditions: [{ type: 'Ready', status: 'False' }] } });
    expect(patched).toMatchObject({
      status: {
        conditions: [
          { type: 'MemoryPressure', status: 'False', reason: 'KubeletHasSufficientMemory' },
          { type: 'Ready', status: 'False', reason: 'KubeletReady' },
        ],
      },
    });
  });

  it('NodeStatus.addresses (patchMergeKey type): a new element goes after the last server element the patch precedes (mergeSortedSlice)', () => {
    const patched = strategic(node, {
      status: {
        addresses: [
          { type: 'Hostname', address: 'worker-1.example' },
          { type: 'InternalDNS', address: 'worker-1.internal' },
        ],
      },
    }) as typeof node;
    expect(patched.status.addresses).toEqual([
      { type: 'InternalIP', address: '10.9.0.2' },
      { type: 'Hostname', address: 'worker-1.example' },
      { type: 'InternalDNS', address: 'worker-1.internal' },
      { type: 'ExternalIP', address: '203.0.113.7' },
    ]);
  });

  it('ObjectMeta.finalizers and NodeSpec.podCIDRs (patchStrategy merge, scalars): a set union (mergeSlice, deduplicateScalars)', () => {
    const patched = strategic(node, {
      metadata: { finalizers: ['c', 'a'] },
      spec: { podCIDRs: ['fd00:10:244:1::/64'] },
    }) as typeof node;
    // Patch values in the patch's order, server-only ones where the server had them.
    expect(patched.metadata.finalizers).toEqual(['c', 'a', 'b']);
    // A value the server did not have goes before the server-only ones after it (mergeSortedSlice).
    expect(patched.spec.podCIDRs).toEqual(['fd00:10:244:1::/64', '10.244.1.0/24']);
  });

  it('NodeSpec.taints has no patchStrategy: the list is replaced and a $patch element in it is kept as sent (mergeSliceHandler)', () => {
    const taints = [{ key: 'gpu', effect: 'NoExecute', $patch: 'delete' }];
    const patched = strategic(node, { spec: { taints }, metadata: { finalizers: ['z'] } }) as typeof node;
    expect(patched.spec.taints).toEqual(taints);
    expect(patched.metadata.finalizers).toEqual(['z', 'a', 'b']);
  });

  it('ObjectMeta.ownerReferences merge by uid (patchMergeKey uid)', () => {
    const owned = {
      metadata: {
        name: 'cm',
        ownerReferences: [{ apiVersion: 'v1', kind: 'Secret', name: 's', uid: 'u-1' }],
      },
    };
    const patched = strategic(
      owned,
      {
        metadata: {
          ownerReferences: [
            { uid: 'u-1', name: 's2' },
            { uid: 'u-2', kind: 'Secret', name: 't' },
          ],
        },
      },
      'ConfigMap',
    );
    expect(patched).toEqual({
      metadata: {
        name: 'cm',
        ownerReferences: [
          { apiVersion: 'v1', kind: 'Secret', name: 's2', uid: 'u-1' },
          { uid: 'u-2', kind: 'Secret', name: 't' },
        ],
      },
    });
  });

  it('NamespaceStatus.conditions merge by type; CertificateSigningRequestStatus.conditions (no patchStrategy tag) are replaced', () => {
    const namespace = { metadata: { name: 'ns' }, status: { conditions: [{ type: 'A', status: 'True' }] } };
    expect(strategic(namespace, { status: { conditions: [{ type: 'B', status: 'False' }] } }, 'Namespace')).toEqual({
      metadata: { name: 'ns' },
      status: {
        conditions: [
          { type: 'B', status: 'False' },
          { type: 'A', status: 'True' },
        ],
      },
    });
    const csr = { metadata: { name: 'csr' }, status: { conditions: [{ type: 'Approved', status: 'True' }] } };
    const patched = strategic(
      csr,
      { status: { conditions: [{ type: 'Failed', status: 'True' }] } },
      'CertificateSigningRequest',
    );
    expect(patched).toEqual({
      metadata: { name: 'csr' },
      status: { conditions: [{ type: 'Failed', status: 'True' }] },
    });
  });
});

describe('strategic merge patch: directives (patch.go)', () => {
  it('$patch: delete in a merge list removes every element with that key (mergeSliceWithSpecialElements, deleteMatchingEntries)', () => {
    const patched = strategic(node, {
      status: { addresses: [{ type: 'ExternalIP', $patch: 'delete' }] },
    }) as typeof node;
    expect(patched.status.addresses).toEqual([
      { type: 'InternalIP', address: '10.9.0.2' },
      { type: 'Hostname', address: 'worker-1' },
    ]);
  });

  it('$patch: replace in a merge list makes the other patch elements the list', () => {
    const patched = strategic(node, {
      status: { conditions: [{ $patch: 'replace' }, { type: 'Ready', status: 'Unknown' }] },
    }) as typeof node;
    expect(patched.status.conditions).toEqual([{ type: 'Ready', status: 'Unknown' }]);
  });

  it('$patch in a map (handleDirectiveInMergeMap): replace takes the map as sent, delete empties it', () => {
    const labelled = { metadata: { name: 'n', labels: { a: '1', b: '2' } }, spec: { unschedulable: true } };
    expect(
      strategic(labelled, { metadata: { labels: { c: '3', $patch: 'replace' } }, spec: { $patch: 'delete' } }),
    ).toEqual({
      metadata: { name: 'n', labels: { c: '3' } },
      spec: {},
    });
  });

  it('an unknown $patch value, or merge (only list elements know it, and refuse it), is a 500 in the words of patch.go', () => {
    const inMap = refusal(node, { metadata: { $patch: 'merge', labels: { a: '1' } } });
    expect(inMap).toMatchObject({
      code: 500,
      reason: '',
      message: 'unknown patch type: merge in map: map[$patch:merge labels:map[a:1]]',
    });
    const inList = refusal(node, { status: { conditions: [{ type: 'Ready', $patch: 'remove' }] } });
    expect(inList.message).toBe('unknown patch type: remove in map: map[$patch:remove type:Ready]');
    expect(refusal(node, { status: { conditions: [{ type: 'Ready', $patch: 'merge' }] } }).message).toBe(
      'merging lists cannot yet be specified in the patch',
    );
  });

  it('an element of a merge list without its merge key: 500 mergepatch.ErrNoMergeKey, kubectl\'s "Error from server: map: …"', () => {
    const status = refusal(node, { status: { conditions: [{ status: 'True', reason: 'x' }] } });
    expect(status).toMatchObject({
      code: 500,
      reason: '',
      message: 'map: map[reason:x status:True] does not contain declared merge key: type',
    });
    expect(refusal(node, { status: { addresses: [{ $patch: 'delete' }] } }).message).toBe(
      'map: map[$patch:delete] does not contain declared merge key: type',
    );
  });

  it('$deleteFromPrimitiveList/<field> removes values from a merge list of scalars (deleteFromSlice)', () => {
    const patched = strategic(node, { metadata: { '$deleteFromPrimitiveList/finalizers': ['a', 'x'] } }) as typeof node;
    expect(patched.metadata.finalizers).toEqual(['b']);
  });

  it('$deleteFromPrimitiveList for a field the object lacks stores the list as the field (mergeMap takes an absent field as sent)', () => {
    const bare = { metadata: { name: 'n' } };
    expect(strategic(bare, { metadata: { '$deleteFromPrimitiveList/finalizers': ['a'] } })).toEqual({
      metadata: { name: 'n', finalizers: ['a'] },
    });
  });

  it('a $deleteFromPrimitiveList key without "/field" is 400 ErrBadPatchFormatForPrimitiveList (extractKey)', () => {
    expect(refusal(node, { metadata: { $deleteFromPrimitiveListfinalizers: ['a'] } })).toMatchObject({
      code: 400,
      reason: 'BadRequest',
      message: 'invalid patch format of primitive list',
    });
  });

  it('$setElementOrder/<field> orders the merged list (mergePatchIntoOriginal, normalizeElementOrder)', () => {
    const patched = strategic(node, {
      status: {
        '$setElementOrder/conditions': [{ type: 'Ready' }, { type: 'MemoryPressure' }],
        conditions: [{ type: 'Ready', status: 'False' }],
      },
    }) as typeof node;
    expect(patched.status.conditions.map((c) => [c.type, c.status])).toEqual([
      ['Ready', 'False'],
      ['MemoryPressure', 'False'],
    ]);
    const mismatch = refusal(node, {
      status: { '$setElementOrder/conditions': [{ type: 'MemoryPressure' }], conditions: [{ type: 'Ready' }] },
    });
    expect(mismatch).toMatchObject({
      code: 500,
      message:
        "The order in patch list:\n[map[type:Ready]]\n doesn't match $setElementOrder list:\n[map[type:MemoryPressure]]\n",
    });
    expect(refusal(node, { status: { $setElementOrderconditions: [] } }).code).toBe(400);
  });

  it('$retainKeys clears the fields it does not list and refuses a patch field it does not list (applyRetainKeysDirective)', () => {
    const lease = { metadata: { name: 'l' }, spec: { holderIdentity: 'a', leaseDurationSeconds: 15 } };
    expect(strategic(lease, { spec: { $retainKeys: ['holderIdentity'], holderIdentity: 'b' } }, 'Lease')).toEqual({
      metadata: { name: 'l' },
      spec: { holderIdentity: 'b' },
    });
    expect(
      refusal(lease, { spec: { $retainKeys: ['holderIdentity'], leaseDurationSeconds: 5 } }, 'Lease'),
    ).toMatchObject({
      code: 400,
      message: 'invalid patch format of retainKeys',
    });
  });

  it('a list of lists in a merge list is 422 ErrNoListOfLists; mixed element types are a 500 (sliceElementType)', () => {
    expect(refusal({ metadata: { finalizers: [] } }, { metadata: { finalizers: [['a']] } })).toMatchObject({
      code: 422,
      message: 'lists of lists are not supported',
    });
    expect(refusal(node, { metadata: { finalizers: [['a']] } })).toMatchObject({
      code: 500,
      message: 'list element types are not identical: [[a b] [[a]]]',
    });
  });

  it('null removes a field; the patch is a JSON object (json.Unmarshal into a map: 400 otherwise, null is no change)', () => {
    expect(strategic(node, { spec: null })).not.toHaveProperty('spec');
    expect(strategic(node, null)).toEqual(node);
    expect(refusal(node, [{ op: 'add' }])).toMatchObject({
      code: 400,
      message: 'json: cannot unmarshal array into Go value of type map[string]interface {}',
    });
  });

  it('a null the merge leaves where the object had no field decodes as FromUnstructured decodes it (runtime/converter.go)', () => {
    // mapFromUnstructured: a nil map[string]string value is ""; a nil struct field is its zero value.
    const bare = { metadata: { name: 'n' } };
    expect(strategic(bare, { metadata: { labels: { a: null } }, spec: { unschedulable: null, taints: [] } })).toEqual({
      metadata: { name: 'n', labels: { a: '' } },
      spec: { taints: [] },
    });
    const cm = { metadata: { name: 'cm' } };
    expect(strategic(cm, { data: { k: null }, metadata: { annotations: { x: null } } }, 'ConfigMap')).toEqual({
      metadata: { name: 'cm', annotations: { x: '' } },
      data: { k: '' },
    });
  });

  it('a "__proto__" key in a patch is a plain key, as in Go\'s maps', () => {
    const annotated = { metadata: { name: 'n', annotations: { a: '1' } } };
    const patch: unknown = JSON.parse('{"metadata":{"annotations":{"__proto__":"x"}}}');
    const patched = strategic(annotated, patch) as typeof annotated;
    expect(Object.entries(patched.metadata.annotations)).toEqual([
      ['a', '1'],
      ['__proto__', 'x'],
    ]);
  });

  it('a kind without Go types (a custom resource) gets 415, as kube-apiserver answers strategic merge for CRDs', () => {
    expect(refusal({ metadata: { name: 'x' } }, {}, 'Foo')).toMatchObject({
      code: 415,
      reason: 'UnsupportedMediaType',
    });
  });
});
