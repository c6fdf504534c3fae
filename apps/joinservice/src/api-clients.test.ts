import * as k8s from '@kubernetes/client-node';
import { pooledApiConfiguration } from '@constellation/kubeadm';
import { sharedKubernetes } from '@constellation/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { boundedApiClients } from './api-clients.js';
import { PausableProxy } from './pausable-proxy.fixture.js';

let proxy: PausableProxy;
let kc: k8s.KubeConfig;

beforeAll(async () => {
  // The run's real API server; these clients only read the default namespace.
  const shared = sharedKubernetes();
  // A TCP proxy in front of it counts the connections the client opens (TLS passes through).
  proxy = await PausableProxy.start(shared.apiServerUrl);
  const admin = new k8s.KubeConfig();
  admin.loadFromFile(shared.superAdminKubeconfig);
  const user = admin.getCurrentUser();
  if (user === null) throw new Error(`${shared.superAdminKubeconfig} names no user`);
  kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [
      {
        name: 'c',
        server: proxy.url,
        caData: Buffer.from(shared.caCertificatePem).toString('base64'),
        skipTLSVerify: false,
      },
    ],
    users: [user],
    contexts: [{ name: 'x', cluster: 'c', user: user.name }],
    currentContext: 'x',
  });
});

afterAll(async () => {
  await proxy.close();
});

describe('API clients', () => {
  it('keep one TLS connection across requests, where the kubeconfig alone opens one per request', async () => {
    const before = proxy.connections;
    const plain = kc.makeApiClient(k8s.CoreV1Api);
    for (let i = 0; i < 3; i++) expect((await plain.readNamespace({ name: 'default' })).metadata?.name).toBe('default');
    expect(proxy.connections - before).toBe(3); // why the pool exists: a handshake per API call

    const pooled = boundedApiClients(kc, 5_000);
    const start = proxy.connections;
    for (let i = 0; i < 5; i++) {
      expect((await pooled.core.readNamespace({ name: 'default' })).metadata?.name).toBe('default');
    }
    // Every request was answered by kube-apiserver (above), all on the one kept connection.
    expect(proxy.connections - start).toBe(1);
  });

  it('close a kept connection once idle, before the API server would, instead of reusing it as it closes', async () => {
    // kube-apiserver closes a connection idle 90 s (secure_serving.go); a request sent on it as it
    // closes fails with ECONNRESET. The pool closes idle connections first (30 s by default).
    const core = new k8s.CoreV1Api(pooledApiConfiguration(kc, { idleConnectionMs: 300 }));
    const start = proxy.connections;
    await core.readNamespace({ name: 'default' });
    await core.readNamespace({ name: 'default' });
    expect(proxy.connections - start).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 700));
    await core.readNamespace({ name: 'default' });
    expect(proxy.connections - start).toBe(2);
  });
});
