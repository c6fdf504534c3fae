import { Kubectl, locateKubernetesPrograms, tokenKubeconfig } from '@constellation/kubernetes-programs';
import { runProgram } from '@constellation/process';
import { sharedKubernetes, tempDirForTest } from '@constellation/testing';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { BOOTSTRAP_TOKEN_PATTERN, createBootstrapToken, generateBootstrapToken } from './bootstrap-token.js';
import { sharedAdminCore } from './claim-records.fixture.js';

// Stored in the run's real API server (kube-system: where the bootstrap authenticator and kubeadm
// look for tokens), each test deleting its own token's Secret.

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

  it('are stored as the Secret kubeadm would create, expiring after the TTL, and authenticate in the node group', async () => {
    const k = sharedKubernetes();
    const core = sharedAdminCore();
    const before = Date.now();
    const token = await createBootstrapToken(core, 15 * 60_000, 'Bootstrap token for a test join');
    const after = Date.now();
    onTestFinished(async () => {
      await core.deleteNamespacedSecret({ namespace: 'kube-system', name: `bootstrap-token-${token.id}` });
    });
    const secret = await core.readNamespacedSecret({ namespace: 'kube-system', name: `bootstrap-token-${token.id}` });
    expect(secret.type).toBe('bootstrap.kubernetes.io/token');
    const data = Object.fromEntries(
      Object.entries(secret.data ?? {}).map(([key, v]) => [key, Buffer.from(v, 'base64').toString()]),
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

    // kubeadm reads it back as a token of its own: both usages, the node group, the description.
    const programs = await locateKubernetesPrograms(k.binDir);
    const listed = await runProgram(
      programs.path('kubeadm'),
      ['token', 'list', '--kubeconfig', k.superAdminKubeconfig, '-o', 'json'],
      { timeoutMs: 30_000 },
    );
    const tokens = listed.stdout
      .split(/\n(?=\{)/)
      .filter((text) => text.trim() !== '')
      .map(
        (text) =>
          JSON.parse(text) as {
            token: string;
            usages?: string[];
            groups?: string[];
            description?: string;
            expires?: string;
          },
      );
    const ours = tokens.find((t) => t.token.startsWith(`${token.id}.`));
    expect(ours).toMatchObject({
      usages: ['authentication', 'signing'],
      groups: ['system:bootstrappers:kubeadm:default-node-token'],
      description: 'Bootstrap token for a test join',
      expires: data['expiration'],
    });

    // kube-apiserver's bootstrap-token authenticator takes it as a bootstrapping node.
    const dir = await tempDirForTest();
    const kubeconfig = join(dir, 'kubeconfig');
    await writeFile(
      kubeconfig,
      tokenKubeconfig({ server: k.apiServerUrl, caPem: k.caCertificatePem, token: token.token }),
      {
        mode: 0o600,
      },
    );
    const whoami = await new Kubectl(programs, kubeconfig).json<{
      status: { userInfo: { username: string; groups: string[] } };
    }>(['auth', 'whoami']);
    expect(whoami.status.userInfo.username).toBe(`system:bootstrap:${token.id}`);
    expect(whoami.status.userInfo.groups).toEqual(
      expect.arrayContaining(['system:bootstrappers', 'system:bootstrappers:kubeadm:default-node-token']),
    );
  });
});
