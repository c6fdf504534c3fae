import * as k8s from '@kubernetes/client-node';
import { pooledApiConfiguration } from '@constellation/kubeadm';
import type { KubeApiServer } from '@constellation/sandbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { boundedApiClients } from './api-clients.js';
import { PausableProxy } from './pausable-proxy.fixture.js';
import { startTlsApiServer } from './tls-api-server.fixture.js';

let api: KubeApiServer;
let proxy: PausableProxy;
let kc: k8s.KubeConfig;

beforeAll(async () => {
  const { api: started, caPem: certificatePem } = await startTlsApiServer();
  api = started;
  // A TCP proxy in front of the TLS server counts the connections the client opens.
  proxy = await PausableProxy.start(api.url);
  kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [
      {
        name: 'c',
        server: `https://127.0.0.1:${String(proxy.port)}`,
        caData: Buffer.from(certificatePem).toString('base64'),
        skipTLSVerify: false,
      },
    ],
    users: [{ name: 'u', token: 'join-service-token' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
});

afterAll(async () => {
  await proxy.close();
  await api.close();
});

describe('API clients', () => {
  it('keep one TLS connection across requests, where the kubeconfig alone opens one per request', async () => {
    const before = proxy.connections;
    const plain = kc.makeApiClient(k8s.CoreV1Api);
    for (let i = 0; i < 3; i++) await plain.readNamespace({ name: 'default' });
    expect(proxy.connections - before).toBe(3); // why the pool exists: a handshake per API call

    const pooled = boundedApiClients(kc, 5_000);
    const start = proxy.connections;
    for (let i = 0; i < 5; i++) {
      expect((await pooled.core.readNamespace({ name: 'default' })).metadata?.name).toBe('default');
    }
    expect(proxy.connections - start).toBe(1);
    // Every request reached the server, each with its own headers on the kept connection.
    expect(api.requests.filter((r) => r.path === '/api/v1/namespaces/default').length).toBeGreaterThanOrEqual(8);
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
