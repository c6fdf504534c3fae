import * as k8s from '@kubernetes/client-node';
import { KubeApiServer } from '@constellation/sandbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BOOTSTRAP_TOKEN_PATTERN, createBootstrapToken, generateBootstrapToken } from './bootstrap-token.js';

let api: KubeApiServer;
let core: k8s.CoreV1Api;

beforeAll(async () => {
  api = await KubeApiServer.start();
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: api.url, skipTLSVerify: true }],
    users: [{ name: 'u', token: 't' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  core = kc.makeApiClient(k8s.CoreV1Api);
});

afterAll(async () => {
  await api.close();
});

describe('bootstrap tokens', () => {
  it("have kubeadm's form and are uniformly drawn from [a-z0-9]", () => {
    const seen = new Set<string>();
    for (let i = 0; i < 2_000; i++) {
      const token = generateBootstrapToken(60_000);
      expect(token.token).toMatch(BOOTSTRAP_TOKEN_PATTERN);
      for (const c of token.secret) seen.add(c);
    }
    expect(seen.size).toBe(36);
  });

  it('are stored as the Secret kubeadm would create, expiring after the TTL', async () => {
    const before = Date.now();
    const token = await createBootstrapToken(core, 15 * 60_000, 'Bootstrap token for a test join');
    const after = Date.now();
    const secret = await core.readNamespacedSecret({ namespace: 'kube-system', name: `bootstrap-token-${token.id}` });
    expect(secret.type).toBe('bootstrap.kubernetes.io/token');
    const data = Object.fromEntries(
      Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]),
    );
    expect(data).toMatchObject({
      'token-id': token.id,
      'token-secret': token.secret,
      'usage-bootstrap-authentication': 'true',
      'usage-bootstrap-signing': 'true',
      'auth-extra-groups': 'system:bootstrappers:kubeadm:default-node-token',
    });
    const expiry = new Date(data['expiration'] ?? '').getTime();
    // Made between `before` and `after`; RFC 3339 whole seconds may drop up to 1 s.
    expect(expiry).toBeGreaterThanOrEqual(before + 15 * 60_000 - 1_000);
    expect(expiry).toBeLessThanOrEqual(after + 15 * 60_000);
  });
});
