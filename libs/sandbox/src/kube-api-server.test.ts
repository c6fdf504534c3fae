import { Agent, get } from 'node:http';
import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeApiServer } from './kube-api-server.js';
import { apiFailure } from './testing/api-failure.js';

let api: KubeApiServer;
let core: k8s.CoreV1Api;
let coordination: k8s.CoordinationV1Api;
let versionApi: k8s.VersionApi;

beforeAll(async () => {
  api = await KubeApiServer.start({ gitVersion: 'v1.32.9' });
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'fake', server: api.url, skipTLSVerify: true }],
    users: [{ name: 'u', token: 'test' }],
    contexts: [{ name: 'c', cluster: 'fake', user: 'u' }],
    currentContext: 'c',
  });
  core = kc.makeApiClient(k8s.CoreV1Api);
  coordination = kc.makeApiClient(k8s.CoordinationV1Api);
  versionApi = kc.makeApiClient(k8s.VersionApi);
});

afterAll(async () => {
  await api.close();
});

describe('Kubernetes API stand-in through @kubernetes/client-node', () => {
  it('creates and reads a bootstrap-token Secret with server-set metadata', async () => {
    const created = await core.createNamespacedSecret({
      namespace: 'kube-system',
      body: {
        metadata: { name: 'bootstrap-token-abcdef' },
        type: 'bootstrap.kubernetes.io/token',
        data: { 'token-id': Buffer.from('abcdef').toString('base64') },
      },
    });
    expect(created.metadata?.resourceVersion).toMatch(/^\d+$/);
    expect(created.metadata?.uid).toBeDefined();
    const read = await core.readNamespacedSecret({ namespace: 'kube-system', name: 'bootstrap-token-abcdef' });
    expect(read.type).toBe('bootstrap.kubernetes.io/token');
    expect(Buffer.from(read.data?.['token-id'] ?? '', 'base64').toString()).toBe('abcdef');
  });

  it('answers 404 NotFound and 409 AlreadyExists with Status bodies', async () => {
    expect(await apiFailure(core.readNamespacedSecret({ namespace: 'kube-system', name: 'missing' }))).toEqual({
      code: 404,
      reason: 'NotFound',
      message: 'secrets "missing" not found',
    });
    await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'dup' } } });
    expect(
      (await apiFailure(core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'dup' } } })))
        .reason,
    ).toBe('AlreadyExists');
    expect(
      (await apiFailure(core.createNamespacedConfigMap({ namespace: 'nope', body: { metadata: { name: 'x' } } }))).code,
    ).toBe(404);
  });

  it('refuses stale updates with 409 Conflict and changes to immutable ConfigMaps with 422', async () => {
    const cm = await core.createNamespacedConfigMap({
      namespace: 'default',
      body: { metadata: { name: 'versioned' }, data: { a: '1' } },
    });
    const updated = await core.replaceNamespacedConfigMap({
      namespace: 'default',
      name: 'versioned',
      body: { metadata: cm.metadata ?? {}, data: { a: '2' } },
    });
    expect(Number(updated.metadata?.resourceVersion)).toBeGreaterThan(Number(cm.metadata?.resourceVersion));
    expect(
      (
        await apiFailure(
          core.replaceNamespacedConfigMap({
            namespace: 'default',
            name: 'versioned',
            body: { metadata: cm.metadata ?? {}, data: { a: '3' } },
          }),
        )
      ).reason,
    ).toBe('Conflict');
    const frozen = await core.createNamespacedConfigMap({
      namespace: 'kube-system',
      body: { metadata: { name: 'frozen' }, data: { a: '1' }, immutable: true },
    });
    expect(
      (
        await apiFailure(
          core.replaceNamespacedConfigMap({
            namespace: 'kube-system',
            name: 'frozen',
            body: { metadata: frozen.metadata ?? {}, data: { a: '2' }, immutable: true },
          }),
        )
      ).code,
    ).toBe(422);
  });

  it('serves leases with create-conflict semantics, lists by label, deletes', async () => {
    const body = {
      metadata: { name: 'control-plane-join', labels: { app: 'join' } },
      spec: { holderIdentity: 'cp-2', leaseDurationSeconds: 600 },
    };
    await coordination.createNamespacedLease({ namespace: 'kube-system', body });
    expect((await apiFailure(coordination.createNamespacedLease({ namespace: 'kube-system', body }))).reason).toBe(
      'AlreadyExists',
    );
    const list = await coordination.listNamespacedLease({ namespace: 'kube-system', labelSelector: 'app=join' });
    expect(list.items.map((l) => l.spec?.holderIdentity)).toEqual(['cp-2']);
    await coordination.deleteNamespacedLease({ namespace: 'kube-system', name: 'control-plane-join' });
    expect(
      (await apiFailure(coordination.readNamespacedLease({ namespace: 'kube-system', name: 'control-plane-join' })))
        .code,
    ).toBe(404);
  });

  it('stores nodes cluster-wide and patches them', async () => {
    await core.createNode({ body: { metadata: { name: 'worker-1', labels: { role: 'worker' } } } });
    const patched = await core.patchNode(
      { name: 'worker-1', body: { metadata: { annotations: { note: 'joined' } } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    expect(patched.metadata?.annotations).toEqual({ note: 'joined' });
    expect(patched.metadata?.labels).toEqual({ role: 'worker' });
    expect((await core.listNode()).items.map((n) => n.metadata?.name)).toContain('worker-1');
  });

  it('validates names and secret data like the real server', async () => {
    expect(
      (
        await apiFailure(
          core.createNamespacedSecret({ namespace: 'default', body: { metadata: { name: 'Bad_Name' } } }),
        )
      ).code,
    ).toBe(422);
    expect(
      (
        await apiFailure(
          core.createNamespacedSecret({
            namespace: 'default',
            body: { metadata: { name: 'bad-data' }, data: { k: '!!not base64!!' } },
          }),
        )
      ).code,
    ).toBe(400);
  });

  it('reports /version and readiness, and answers 503 while not ready', async () => {
    expect(await versionApi.getCode()).toMatchObject({ major: '1', minor: '32', gitVersion: 'v1.32.9' });
    api.setReady(false);
    expect((await fetch(`${api.url}/readyz`)).status).toBe(500);
    expect((await apiFailure(core.listNode())).code).toBe(503);
    api.setReady(true);
    expect(await (await fetch(`${api.url}/readyz`)).text()).toBe('ok');
  });

  it('keeps an idle connection 90 s, as kube-apiserver does', async () => {
    // secure_serving.go: IdleTimeout 90 s ("matches http.DefaultTransport keep-alive timeout").
    // Node announces its keep-alive timeout; its 5 s default dropped connections a client was
    // about to reuse.
    const agent = new Agent({ keepAlive: true });
    try {
      const header = await new Promise<string | string[] | undefined>((resolve, reject) => {
        get(`${api.url}/version`, { agent }, (res) => {
          res.resume();
          resolve(res.headers['keep-alive']);
        }).once('error', reject);
      });
      expect(header).toBe('timeout=90');
    } finally {
      agent.destroy();
    }
  });
});
