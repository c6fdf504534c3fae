import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeApiServer } from './kube-api-server.js';

// The API stand-in decodes, validates, patches and dry-runs like kube-apiserver. Each test
// names the Kubernetes rule it mirrors.

let api: KubeApiServer;

beforeAll(async () => {
  api = await KubeApiServer.start();
});

afterAll(async () => {
  await api.close();
});

async function call(
  method: string,
  path: string,
  body?: unknown,
  contentType = 'application/json',
): Promise<{ code: number; body: { reason?: string; message?: string; metadata?: { resourceVersion?: string } } }> {
  const res = await fetch(`${api.url}${path}`, {
    method,
    headers: { 'content-type': contentType },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  return { code: res.status, body: (await res.json()) as { reason?: string; message?: string } };
}

const LEASES = '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases';
const lease = (name: string, spec: Record<string, unknown>): unknown => ({ metadata: { name }, spec });

describe('metav1.MicroTime (apimachinery meta/v1 micro_time.go, RFC3339Micro)', () => {
  it('refuses Lease times without exactly six fractional digits with a 400 decode error', async () => {
    for (const time of ['2025-01-02T03:04:05.123Z', '2025-01-02T03:04:05Z', '2025-01-02T03:04:05.1234567Z']) {
      const res = await call('POST', LEASES, lease('micro-bad', { holderIdentity: 'a', renewTime: time }));
      expect(res.code).toBe(400);
      expect(res.body.message).toContain('Lease in version "v1" cannot be handled as a Lease: parsing time');
      expect(res.body.message).toContain('"2006-01-02T15:04:05.000000Z07:00"');
    }
  });

  it('accepts six fractional digits, in UTC or with an offset', async () => {
    const res = await call(
      'POST',
      LEASES,
      lease('micro-good', {
        acquireTime: '2025-01-02T03:04:05.123456Z',
        renewTime: '2025-01-02T03:04:05.123456+01:00',
      }),
    );
    expect(res.code).toBe(201);
  });

  it("accepts what @kubernetes/client-node's V1MicroTime sends", async () => {
    const kc = new k8s.KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: api.url, skipTLSVerify: true }],
      users: [{ name: 'u' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    const coordination = kc.makeApiClient(k8s.CoordinationV1Api);
    const now = new k8s.V1MicroTime(Date.now());
    await coordination.createNamespacedLease({
      namespace: 'kube-system',
      body: { metadata: { name: 'micro-client' }, spec: { holderIdentity: 'n', renewTime: now } },
    });
    // A plain Date serialises with three digits: the real server's 400 (kubernetes-client/javascript#828).
    const plain = await coordination
      .createNamespacedLease({
        namespace: 'kube-system',
        body: { metadata: { name: 'micro-date' }, spec: { holderIdentity: 'n', renewTime: new Date() } },
      })
      .catch((err: unknown) => err);
    expect((plain as k8s.ApiException<string>).code).toBe(400);
  });
});

describe('object validation (pkg/apis/core/validation, pkg/apis/coordination/validation)', () => {
  it('ValidateLeaseSpec: leaseDurationSeconds > 0, leaseTransitions >= 0', async () => {
    const zero = await call('POST', LEASES, lease('l-zero', { leaseDurationSeconds: 0 }));
    expect(zero.code).toBe(422);
    expect(zero.body.message).toBe(
      'Lease.coordination.k8s.io "l-zero" is invalid: spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0',
    );
    const negative = await call('POST', LEASES, lease('l-neg', { leaseTransitions: -1 }));
    expect(negative.body.message).toContain(
      'spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0',
    );
  });

  it('LeaseSpec field types are decoded: a numeric holderIdentity is a 400', async () => {
    const res = await call('POST', LEASES, lease('l-type', { holderIdentity: 7 }));
    expect(res.code).toBe(400);
    expect(res.body.message).toContain('holderIdentity of type string');
  });

  it('ValidateConfigMap / ValidateSecret: keys must match IsConfigMapKey [-._a-zA-Z0-9]+', async () => {
    const cm = await call('POST', '/api/v1/namespaces/default/configmaps', {
      metadata: { name: 'bad-key' },
      data: { 'has space': 'x' },
    });
    expect(cm.code).toBe(422);
    expect(cm.body.message).toContain('ConfigMap "bad-key" is invalid: data[has space]');
    expect(cm.body.message).toContain("regex used for validation is '[-._a-zA-Z0-9]+'");
    const secret = await call('POST', '/api/v1/namespaces/default/secrets', {
      metadata: { name: 'bad-key' },
      data: { 'a/b': Buffer.from('x').toString('base64') },
    });
    expect(secret.code).toBe(422);
    expect(secret.body.message).toContain('Secret "bad-key" is invalid: data[a/b]');
    const dots = await call('POST', '/api/v1/namespaces/default/configmaps', {
      metadata: { name: 'dots' },
      data: { '..data': 'x' },
    });
    expect(dots.code).toBe(422);
  });

  it('ValidateConfigMap: a key may not be in both data and binaryData', async () => {
    const res = await call('POST', '/api/v1/namespaces/default/configmaps', {
      metadata: { name: 'dup-key' },
      data: { k: 'x' },
      binaryData: { k: 'eA==' },
    });
    expect(res.code).toBe(422);
    expect(res.body.message).toContain('duplicate of key present in data');
  });

  it('ValidateObjectMeta: names are DNS-1123 subdomains (namespaces: labels), label keys qualified names', async () => {
    expect((await call('POST', LEASES, lease('Upper', {}))).code).toBe(422);
    expect((await call('POST', '/api/v1/nodes', { metadata: { name: 'a'.repeat(254) } })).code).toBe(422);
    expect((await call('POST', '/api/v1/namespaces', { metadata: { name: 'a.b' } })).code).toBe(422);
    expect((await call('POST', '/api/v1/nodes', { metadata: { name: 'a.b' } })).code).toBe(201);
    const label = await call('POST', '/api/v1/nodes', { metadata: { name: 'bad-label', labels: { '-x': 'y' } } });
    expect(label.code).toBe(422);
    // IsQualifiedName's wording, the same checks as taint keys (qualified-name.ts).
    const text = JSON.stringify(label.body);
    expect(text).toContain(
      'metadata.labels: Invalid value: \\"-x\\": name part must consist of alphanumeric characters',
    );
    expect(text).toContain("regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'");
  });
});

describe('REST semantics (staging/src/k8s.io/apiserver/pkg/endpoints/handlers)', () => {
  it('dryRun=All validates and answers but stores nothing', async () => {
    const path = '/api/v1/namespaces/default/configmaps';
    const dry = await call('POST', `${path}?dryRun=All`, { metadata: { name: 'dry' }, data: { a: '1' } });
    expect(dry.code).toBe(201);
    expect((await call('GET', `${path}/dry`)).code).toBe(404);
    expect((await call('POST', `${path}?dryRun=All`, { metadata: { name: 'dry' }, data: { 'b c': '1' } })).code).toBe(
      422,
    );
    expect((await call('POST', path, { metadata: { name: 'wet' }, data: { a: '1' } })).code).toBe(201);
    await call('PUT', `${path}/wet?dryRun=All`, { metadata: { name: 'wet' }, data: { a: '2' } });
    await call('DELETE', `${path}/wet?dryRun=All`);
    const stored = await call('GET', `${path}/wet`);
    expect(stored.code).toBe(200);
    expect((stored.body as { data?: unknown }).data).toEqual({ a: '1' });
    expect((await call('POST', `${path}?dryRun=Some`, { metadata: { name: 'x' } })).code).toBe(422);
  });

  it('answers 404 for group versions it does not serve', async () => {
    expect((await call('GET', '/apis/coordination.k8s.io/v2/namespaces/kube-system/leases')).code).toBe(404);
    expect((await call('GET', '/api/v2/nodes')).code).toBe(404);
    expect((await call('GET', '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases')).code).toBe(200);
  });

  it('PUT on a missing Lease creates it (lease strategy AllowCreateOnUpdate); not so for ConfigMaps', async () => {
    const created = await call('PUT', `${LEASES}/put-created`, lease('put-created', { holderIdentity: 'n' }));
    expect(created.code).toBe(201);
    expect((await call('GET', `${LEASES}/put-created`)).code).toBe(200);
    const cm = await call('PUT', '/api/v1/namespaces/default/configmaps/put-missing', {
      metadata: { name: 'put-missing' },
    });
    expect(cm.code).toBe(404);
  });

  it('applies JSON patches (RFC 6902) and merge patches (RFC 7386)', async () => {
    const path = '/api/v1/namespaces/default/configmaps/patched';
    await call('POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'patched' }, data: { a: '1' } });
    const json = await call(
      'PATCH',
      path,
      [
        { op: 'test', path: '/data/a', value: '1' },
        { op: 'add', path: '/data/b', value: '2' },
        { op: 'remove', path: '/data/a' },
      ],
      'application/json-patch+json',
    );
    expect(json.code).toBe(200);
    expect((json.body as { data?: unknown }).data).toEqual({ b: '2' });
    const merge = await call('PATCH', path, { data: { b: null, c: '3' } }, 'application/merge-patch+json');
    expect((merge.body as { data?: unknown }).data).toEqual({ c: '3' });
  });

  it('refuses patches with 415, 400 or 422, never 500', async () => {
    const path = '/api/v1/namespaces/default/configmaps/patched';
    expect((await call('PATCH', path, 'data: {}', 'application/apply-patch+yaml')).code).toBe(415);
    expect((await call('PATCH', path, { data: {} }, 'application/json')).code).toBe(415);
    expect((await call('PATCH', path, { op: 'add' }, 'application/json-patch+json')).code).toBe(400);
    const missing = await call(
      'PATCH',
      path,
      [{ op: 'replace', path: '/data/nope/x', value: '1' }],
      'application/json-patch+json',
    );
    expect(missing.code).toBe(422);
    const failedTest = await call(
      'PATCH',
      path,
      [{ op: 'test', path: '/data/c', value: 'other' }],
      'application/json-patch+json',
    );
    expect(failedTest.code).toBe(422);
    const invalidResult = await call('PATCH', path, { data: { 'bad key': 'x' } }, 'application/merge-patch+json');
    expect(invalidResult.code).toBe(422);
    const renamed = await call('PATCH', path, { metadata: { name: 'other' } }, 'application/merge-patch+json');
    expect(renamed.code).toBe(400);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    const proto = await call('PATCH', path, '{"__proto__": {"polluted": "yes"}}', 'application/merge-patch+json');
    expect(proto.code).toBeLessThan(500);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });
});
