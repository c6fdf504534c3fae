import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeApiServer } from '../kube-api-server.js';
import type { KubeStatus } from '../kube-api-status.js';
import { kubectl, resourceType, startTestCluster } from './test-cluster.fixture.js';
import type { TestCluster } from './test-cluster.fixture.js';

// Node taints are refused as kube-apiserver refuses them: pkg/apis/core/validation/validation.go
// ValidateNode -> validateNodeTaints (-> ValidateLabelName, IsValidLabelValue, validateTaintEffect,
// field.Duplicate), the wording of apimachinery's util/validation/field/errors.go ErrorBody and
// of util/validation/validation.go IsQualifiedName / IsValidLabelValue (Kubernetes 1.32), in a
// 422 built as pkg/api/errors/errors.go NewInvalid builds it. ValidateNode names the field
// `metadata.taints[i]` (it passes the metadata path), not `spec.taints[i]`.

const QUALIFIED_NAME_PART =
  "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const SUPPORTED_EFFECTS = 'supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"';

let api: KubeApiServer;

beforeAll(async () => {
  api = await KubeApiServer.start();
});

afterAll(async () => {
  await api.close();
});

interface Answer {
  code: number;
  status: KubeStatus;
}

async function send(method: string, path: string, body: unknown, contentType = 'application/json'): Promise<Answer> {
  const res = await fetch(`${api.url}${path}`, {
    method,
    headers: { 'content-type': contentType },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  return { code: res.status, status: (await res.json()) as KubeStatus };
}

const createNode = (name: string, taints: unknown): Promise<Answer> =>
  send('POST', '/api/v1/nodes', { metadata: { name }, spec: { taints } });

describe('validateNodeTaints (pkg/apis/core/validation/validation.go)', () => {
  it('an effect validateTaintEffect does not know: 422, field.NotSupported with the three effects', async () => {
    const res = await createNode('bad-effect', [{ key: 'dedicated', value: 'db', effect: 'NoScheduleNoAdmit' }]);
    expect(res.code).toBe(422);
    expect(res.status.reason).toBe('Invalid');
    expect(res.status.message).toBe(
      `Node "bad-effect" is invalid: metadata.taints[0].effect: Unsupported value: "NoScheduleNoAdmit": ${SUPPORTED_EFFECTS}`,
    );
    expect(res.status.details).toEqual({
      name: 'bad-effect',
      kind: 'Node',
      causes: [
        {
          reason: 'FieldValueNotSupported',
          message: `Unsupported value: "NoScheduleNoAdmit": ${SUPPORTED_EFFECTS}`,
          field: 'metadata.taints[0].effect',
        },
      ],
    });
  });

  it('no effect: field.Required (validateTaintEffect with allowEmpty false)', async () => {
    const res = await createNode('no-effect', [{ key: 'dedicated' }]);
    expect(res.code).toBe(422);
    expect(res.status.message).toBe('Node "no-effect" is invalid: metadata.taints[0].effect: Required value');
  });

  it('a key that is not a qualified name (ValidateLabelName -> IsQualifiedName), a bad value (IsValidLabelValue)', async () => {
    const res = await createNode('bad-key', [
      { key: 'Example.com/db', effect: 'NoSchedule' },
      { key: 'dedicated_', value: `${'x'.repeat(63)}-`, effect: 'NoExecute' },
    ]);
    expect(res.code).toBe(422);
    const causes = res.status.details?.causes ?? [];
    expect(causes.map((c) => [c.field, c.reason])).toEqual([
      ['metadata.taints[0].key', 'FieldValueInvalid'],
      ['metadata.taints[1].key', 'FieldValueInvalid'],
      ['metadata.taints[1].value', 'FieldValueInvalid'],
    ]);
    expect(causes[0]?.message).toBe(
      `Invalid value: "Example.com/db": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
    );
    expect(causes[1]?.message).toBe(`Invalid value: "dedicated_": ${QUALIFIED_NAME_PART}`);
    // IsValidLabelValue's messages joined with ";" into one field.Invalid.
    expect(causes[2]?.message).toBe(
      `Invalid value: "${'x'.repeat(63)}-": must be no more than 63 characters;${LABEL_VALUE}`,
    );
    expect(res.status.message).toMatch(/^Node "bad-key" is invalid: \[metadata\.taints\[0\]\.key: Invalid value: /);
  });

  it("an empty key: both of IsQualifiedName's name-part messages, as two causes", async () => {
    const res = await createNode('empty-key', [{ key: '', effect: 'NoSchedule' }]);
    expect(res.status.details?.causes?.map((c) => c.message)).toEqual([
      'Invalid value: "": name part must be non-empty',
      `Invalid value: "": ${QUALIFIED_NAME_PART}`,
    ]);
  });

  it('two taints with the same key and effect: field.Duplicate at the second, its detail replaced', async () => {
    const res = await createNode('duplicate', [
      { key: 'dedicated', value: 'a', effect: 'NoSchedule' },
      { key: 'dedicated', value: 'b', effect: 'NoExecute' },
      { key: 'dedicated', value: 'c', effect: 'NoSchedule' },
    ]);
    expect(res.code).toBe(422);
    expect(res.status.message).toBe(
      'Node "duplicate" is invalid: metadata.taints[2]: Duplicate value: core.Taint{Key:"dedicated", Value:"c", Effect:"NoSchedule", TimeAdded:(*v1.Time)(nil)}: taints must be unique by key and effect pair',
    );
    expect(res.status.details?.causes?.[0]?.reason).toBe('FieldValueDuplicate');
  });

  it('accepts a valid list: same key with other effects, prefixed keys, empty values', async () => {
    const taints = [
      { key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' },
      { key: 'node.kubernetes.io/not-ready', effect: 'NoExecute', timeAdded: '2025-01-02T03:04:05Z' },
      { key: 'dedicated', value: 'db', effect: 'NoSchedule' },
      { key: 'dedicated', value: 'db', effect: 'PreferNoSchedule' },
    ];
    const res = await createNode('valid-taints', taints);
    expect(res.code).toBe(201);
  });

  it('refuses the same on update and on patch, and keeps the stored taints', async () => {
    expect((await createNode('patched', [{ key: 'a', effect: 'NoSchedule' }])).code).toBe(201);
    const patch = await send(
      'PATCH',
      '/api/v1/nodes/patched',
      { spec: { taints: [{ key: 'a', effect: 'Sometimes' }] } },
      'application/merge-patch+json',
    );
    expect(patch.code).toBe(422);
    expect(patch.status.message).toContain('metadata.taints[0].effect: Unsupported value: "Sometimes"');
    const put = await send('PUT', '/api/v1/nodes/patched', {
      metadata: { name: 'patched' },
      spec: { taints: [{ key: '/a', effect: 'NoSchedule' }] },
    });
    expect(put.code).toBe(422);
    expect(put.status.message).toContain('metadata.taints[0].key: Invalid value: "/a": prefix part must be non-empty');
    const stored = api.store.get(resourceType('nodes'), undefined, 'patched');
    expect(stored['spec']).toEqual({ taints: [{ key: 'a', effect: 'NoSchedule' }] });
  });

  it('taints that do not decode into []v1.Taint are a 400 before validation', async () => {
    const res = await createNode('not-decoded', [{ key: 'a', effect: 7 }]);
    expect(res.code).toBe(400);
    expect(res.status.message).toBe(
      'Node in version "v1" cannot be handled as a Node: json: cannot unmarshal number into Go struct field Taint.spec.taints.effect of type v1.TaintEffect',
    );
  });
});

describe('real kubectl refused a bad taint like kube-apiserver refuses it', () => {
  let cluster: TestCluster;
  let admin: string;

  beforeAll(async () => {
    cluster = await startTestCluster();
    cluster.api.store.create(resourceType('nodes'), undefined, { metadata: { name: 'worker-1' } });
    admin = await cluster.writeKubeconfig('kubernetes-admin', {
      client: await cluster.issueClient('kubernetes-admin', ['kubeadm:cluster-admins']),
    });
  });

  afterAll(async () => {
    await cluster.close();
  });

  it('kubectl patch --type=merge with a bad effect prints the 422 (Invalid) and the field', async () => {
    const patch = JSON.stringify({ spec: { taints: [{ key: 'dedicated', value: 'db', effect: 'Never' }] } });
    const result = await kubectl(cluster, admin, ['patch', 'node', 'worker-1', '--type=merge', '-p', patch]);
    expect(result.code).toBe(1);
    expect(result.stderr.trim()).toBe(
      `The Node "worker-1" is invalid: metadata.taints[0].effect: Unsupported value: "Never": ${SUPPORTED_EFFECTS}`,
    );
    const good = JSON.stringify({ spec: { taints: [{ key: 'dedicated', value: 'db', effect: 'NoSchedule' }] } });
    const accepted = await kubectl(cluster, admin, ['patch', 'node', 'worker-1', '--type=merge', '-p', good]);
    expect(accepted.stderr).toBe('');
    expect(accepted.stdout.toString().trim()).toBe('node/worker-1 patched');
  });

  it('several causes: kubectl lists each field (it renders details.causes, not the message)', async () => {
    const taints = [
      { key: 'a', effect: 'NoSchedule' },
      { key: 'a', effect: 'NoSchedule' },
      { key: 'b', value: 'not ok', effect: 'NoExecute' },
    ];
    const result = await kubectl(cluster, admin, [
      'patch',
      'node',
      'worker-1',
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { taints } }),
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr.split('\n')).toEqual([
      'The Node "worker-1" is invalid: ',
      '* metadata.taints[1]: Duplicate value: core.Taint{Key:"a", Value:"", Effect:"NoSchedule", TimeAdded:(*v1.Time)(nil)}: taints must be unique by key and effect pair',
      `* metadata.taints[2].value: Invalid value: "not ok": ${LABEL_VALUE}`,
      '',
    ]);
  });
});
