import { request } from 'node:https';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { repoRoot } from '@constellation/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { AUTHORIZATION_BINDINGS, JOIN_SERVICE_USER } from './authorization-rules.js';
import type { AuthorizationBinding } from './authorization-rules.js';
import { authenticateBootstrapToken } from './bootstrap-token-authenticator.js';
import { humanDuration } from './human-duration.js';
import { mintServiceAccountCredential, parseTokenAuthFile } from './static-token-file.js';
import { apiFailure } from '../testing/api-failure.js';
import { resourceType, startTestCluster } from './test-cluster.fixture.js';
import type { TestCluster } from './test-cluster.fixture.js';

let cluster: TestCluster;
let caPem: string;

beforeAll(async () => {
  cluster = await startTestCluster();
  caPem = cluster.ca.certificatePem;
  cluster.api.store.create(resourceType('nodes'), undefined, { metadata: { name: 'worker-1' } });
  cluster.api.store.create(resourceType('nodes'), undefined, { metadata: { name: 'control-plane-1' } });
  cluster.api.store.create(resourceType('configmaps'), 'kube-public', {
    metadata: { name: 'cluster-info' },
    data: { kubeconfig: 'x' },
  });
  cluster.api.store.create(resourceType('configmaps'), 'kube-system', {
    metadata: { name: 'constellation-cluster' },
    data: { a: '1' },
  });
});

afterAll(async () => {
  await cluster.close();
});

/** A raw HTTPS GET with the cluster CA and optional bearer token: status and parsed Status body. */
function get(path: string, token?: string): Promise<{ status: number; body: { message?: string; reason?: string } }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${cluster.api.url}${path}`,
      {
        ca: caPem,
        headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
        timeout: 5_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          let body: { message?: string; reason?: string } = {};
          try {
            body = JSON.parse(text) as typeof body;
          } catch {
            body = { message: text };
          }
          resolve({ status: res.statusCode ?? 0, body });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`GET ${path} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

describe('anonymous requests', () => {
  it('are served what RBAC grants system:unauthenticated and system:anonymous, and 401 elsewhere', async () => {
    // bootstrappolicy system:public-info-viewer; kubeadm's kubeadm:bootstrap-signer-clusterinfo Role.
    expect((await get('/version')).status).toBe(200);
    expect((await get('/healthz')).status).toBe(200);
    expect((await get('/api/v1/namespaces/kube-public/configmaps/cluster-info')).status).toBe(200);
    expect(await get('/api')).toMatchObject({ status: 401, body: { reason: 'Unauthorized', message: 'Unauthorized' } });
    expect((await get('/api/v1/namespaces/kube-public/configmaps')).status).toBe(401);
    expect((await get('/api/v1/namespaces/kube-system/secrets')).status).toBe(401);
  });

  it('an unknown bearer token is 401 even where anonymous would be served (bearertoken.Authenticator)', async () => {
    expect((await get('/version', 'abcdef.0123456789abcdef')).status).toBe(401);
    expect((await get('/version', 'not-a-token')).status).toBe(401);
  });
});

describe('the JoinService credential (deploy/joinservice/rbac.yaml)', () => {
  let core: k8s.CoreV1Api;
  let coordination: k8s.CoordinationV1Api;

  beforeAll(async () => {
    const kubeconfigPath = join(cluster.dir, 'joinservice.conf');
    const user = await mintServiceAccountCredential({
      tokenAuthFile: cluster.tokenAuthFile,
      kubeconfigPath,
      server: cluster.api.url,
      caPem,
    });
    expect(user.name).toBe(JOIN_SERVICE_USER);
    expect((await readFile(kubeconfigPath)).length).toBeGreaterThan(0);
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(kubeconfigPath);
    core = kc.makeApiClient(k8s.CoreV1Api);
    coordination = kc.makeApiClient(k8s.CoordinationV1Api);
  });

  it('does what the JoinService does: creates and revokes token Secrets, reads the cluster ConfigMap, holds the Lease, reads Nodes', async () => {
    for (const name of ['bootstrap-token-qwerty', 'bootstrap-token-asdfgh'])
      await core.createNamespacedSecret({
        namespace: 'kube-system',
        body: { metadata: { name }, type: 'bootstrap.kubernetes.io/token' },
      });
    await core.deleteNamespacedSecret({ namespace: 'kube-system', name: 'bootstrap-token-asdfgh' });
    await core.readNamespacedConfigMap({ namespace: 'kube-system', name: 'constellation-cluster' });
    await core.createNamespacedConfigMap({
      namespace: 'kube-system',
      body: { metadata: { name: 'constellation-disk-1' } },
    });
    const lease = await coordination.createNamespacedLease({
      namespace: 'kube-system',
      body: { metadata: { name: 'constellation-control-plane-join' }, spec: { holderIdentity: 'cp-2' } },
    });
    await coordination.replaceNamespacedLease({
      namespace: 'kube-system',
      name: 'constellation-control-plane-join',
      body: lease,
    });
    await core.readNode({ name: 'worker-1' });
    await coordination.deleteNamespacedLease({ namespace: 'kube-system', name: 'constellation-control-plane-join' });
  });

  it('is refused anything else with 403: listing or reading Secrets, other namespaces, other Leases', async () => {
    expect(await apiFailure(core.listNamespacedSecret({ namespace: 'kube-system' }))).toEqual({
      code: 403,
      reason: 'Forbidden',
      message:
        'secrets is forbidden: User "system:serviceaccount:kube-system:join-service" cannot list resource "secrets" in API group "" in the namespace "kube-system"',
    });
    expect(
      (await apiFailure(core.readNamespacedSecret({ namespace: 'kube-system', name: 'bootstrap-token-qwerty' }))).code,
    ).toBe(403);
    expect(
      (await apiFailure(core.createNamespacedSecret({ namespace: 'default', body: { metadata: { name: 's' } } }))).code,
    ).toBe(403);
    expect(
      (
        await apiFailure(
          coordination.readNamespacedLease({ namespace: 'kube-system', name: 'kube-controller-manager' }),
        )
      ).message,
    ).toBe(
      'leases.coordination.k8s.io "kube-controller-manager" is forbidden: User "system:serviceaccount:kube-system:join-service" cannot get resource "leases" in API group "coordination.k8s.io" in the namespace "kube-system"',
    );
    expect((await apiFailure(core.listNode())).message).toContain(
      'cannot list resource "nodes" in API group "" at the cluster scope',
    );
  });

  it('has exactly the rules of deploy/joinservice/rbac.yaml', async () => {
    const manifests = parseAllDocuments(await readFile(join(repoRoot(), 'deploy/joinservice/rbac.yaml'), 'utf8')).map(
      (doc) =>
        doc.toJSON() as {
          kind: string;
          metadata: { name: string; namespace?: string };
          rules?: unknown[];
          subjects?: { kind: string; name: string; namespace?: string }[];
          roleRef?: { name: string };
        },
    );
    const fromYaml = manifests
      .filter((m) => m.kind === 'RoleBinding' || m.kind === 'ClusterRoleBinding')
      .map((binding) => {
        const role = manifests.find(
          (m) =>
            m.kind === (binding.kind === 'RoleBinding' ? 'Role' : 'ClusterRole') &&
            m.metadata.name === binding.roleRef?.name,
        );
        return {
          namespace: binding.metadata.namespace,
          users: (binding.subjects ?? []).map((s) => `system:serviceaccount:${s.namespace ?? ''}:${s.name}`),
          rules: role?.rules,
        };
      });
    const mirrored = AUTHORIZATION_BINDINGS.filter((b: AuthorizationBinding) =>
      b.subjects.some((s) => s.name === JOIN_SERVICE_USER),
    ).map((b) => ({ namespace: b.namespace, users: b.subjects.map((s) => s.name), rules: b.rules }));
    expect(mirrored).toEqual(fromYaml);
  });
});

describe('kubelet identities (Node authorizer, node_authorizer.go)', () => {
  let core: k8s.CoreV1Api;
  let coordination: k8s.CoordinationV1Api;

  beforeAll(async () => {
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(
      await cluster.writeKubeconfig('system:node:worker-1', {
        client: await cluster.issueClient('system:node:worker-1', ['system:nodes']),
      }),
    );
    core = kc.makeApiClient(k8s.CoreV1Api);
    coordination = kc.makeApiClient(k8s.CoordinationV1Api);
  });

  it('reads and updates its own Node only (NodeRestriction for writes)', async () => {
    await core.readNode({ name: 'worker-1' });
    await core.patchNode(
      { name: 'worker-1', body: { metadata: { labels: { a: 'b' } } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    expect((await apiFailure(core.readNode({ name: 'control-plane-1' }))).code).toBe(403);
    expect(
      (
        await apiFailure(
          core.patchNode(
            { name: 'control-plane-1', body: { metadata: { labels: { a: 'b' } } } },
            k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
          ),
        )
      ).message,
    ).toContain('node "worker-1" is not allowed to modify node "control-plane-1"');
    expect((await apiFailure(core.createNode({ body: { metadata: { name: 'impostor' } } }))).code).toBe(403);
    expect((await apiFailure(core.listNode())).code).toBe(403);
  });

  it('holds its own lease in kube-node-lease only (authorizeLease)', async () => {
    await coordination.createNamespacedLease({
      namespace: 'kube-node-lease',
      body: { metadata: { name: 'worker-1' } },
    });
    await coordination.readNamespacedLease({ namespace: 'kube-node-lease', name: 'worker-1' });
    expect(
      (await apiFailure(coordination.readNamespacedLease({ namespace: 'kube-node-lease', name: 'control-plane-1' })))
        .message,
    ).toContain('can only access node lease with the same name as the requesting node');
    expect((await apiFailure(coordination.listNamespacedLease({ namespace: 'kube-system' }))).message).toContain(
      'can only get, create, update, patch, or delete a node lease',
    );
  });

  it('a certificate in system:nodes whose CN is not system:node:<name> gets nothing from the Node authorizer', async () => {
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(
      await cluster.writeKubeconfig('odd', { client: await cluster.issueClient('worker-1', ['system:nodes']) }),
    );
    expect((await apiFailure(kc.makeApiClient(k8s.CoreV1Api).readNode({ name: 'worker-1' }))).code).toBe(403);
  });

  it('a server-only certificate is not a client credential (x509 authenticator checks ExtKeyUsageClientAuth)', async () => {
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(
      await cluster.writeKubeconfig('server', {
        client: await cluster.issueClient('system:node:worker-1', ['system:nodes'], 'server'),
      }),
    );
    expect((await apiFailure(kc.makeApiClient(k8s.CoreV1Api).readNode({ name: 'worker-1' }))).code).toBe(401);
  });
});

describe('bootstrap token authenticator (plugin/pkg/auth/authenticator/token/bootstrap/bootstrap.go)', () => {
  const encode = (data: Record<string, string>): Record<string, string> =>
    Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')]));
  const valid = {
    'token-id': 'abcdef',
    'token-secret': '0123456789abcdef',
    'usage-bootstrap-authentication': 'true',
    'auth-extra-groups': 'system:bootstrappers:kubeadm:default-node-token',
  };
  const authenticate = (
    data: Record<string, string>,
    type = 'bootstrap.kubernetes.io/token',
    token = 'abcdef.0123456789abcdef',
  ) =>
    authenticateBootstrapToken(token, (namespace, name) =>
      namespace === 'kube-system' && name === 'bootstrap-token-abcdef'
        ? { type, data: encode(data), metadata: {} }
        : undefined,
    );

  it('authenticates system:bootstrap:<id> in system:bootstrappers plus auth-extra-groups', () => {
    expect(authenticate(valid)).toEqual({
      outcome: 'authenticated',
      user: {
        name: 'system:bootstrap:abcdef',
        groups: ['system:bootstrappers', 'system:bootstrappers:kubeadm:default-node-token'],
      },
    });
  });

  it.each([
    ['a wrong secret', { ...valid, 'token-secret': '0123456789abcdeX' }, undefined, 'token secret does not match'],
    ['a secret of another type', valid, 'Opaque', 'secret has the wrong type'],
    [
      'a token-id that does not match the name',
      { ...valid, 'token-id': 'zzzzzz' },
      undefined,
      'token-id does not match',
    ],
    ['an expired token', { ...valid, expiration: '2020-01-01T00:00:00Z' }, undefined, 'expired'],
    ['an unparseable expiration', { ...valid, expiration: 'soon' }, undefined, 'expired'],
    [
      'no usage-bootstrap-authentication',
      { ...valid, 'usage-bootstrap-authentication': 'false' },
      undefined,
      'not marked',
    ],
    [
      'an extra group outside system:bootstrappers:',
      { ...valid, 'auth-extra-groups': 'system:masters' },
      undefined,
      'invalid group',
    ],
  ])('refuses %s', (_what, data, type, why) => {
    const result = authenticate(data, type);
    expect(result.outcome).toBe('rejected');
    expect(result.outcome === 'rejected' ? result.why : '').toContain(why);
  });

  it('leaves tokens of another shape to the other authenticators, and refuses unknown ids', () => {
    expect(authenticate(valid, undefined, 'not-a-bootstrap-token').outcome).toBe('absent');
    expect(authenticate(valid, undefined, 'zzzzzz.0123456789abcdef')).toEqual({
      outcome: 'rejected',
      why: 'bootstrap token zzzzzz: no such token',
    });
  });
});

describe('helpers', () => {
  it('humanDuration matches apimachinery duration.HumanDuration', () => {
    const s = 1000;
    expect(
      [0, 119 * s, 125 * s, 600 * s, 3 * 3600 * s + 60 * s, 49 * 3600 * s, 800 * 86400 * s].map(humanDuration),
    ).toEqual(['0s', '119s', '2m5s', '10m', '3h1m', '2d1h', '2y70d']);
  });

  it('parses a --token-auth-file with quoted groups', () => {
    expect(parseTokenAuthFile('# c\ntok,alice,1,"g1,g2"\ntok2,bob,2\n', 'tokens.csv')).toEqual([
      { token: 'tok', user: 'alice', uid: '1', groups: ['g1', 'g2'] },
      { token: 'tok2', user: 'bob', uid: '2', groups: [] },
    ]);
    expect(() => parseTokenAuthFile('only-token\n', 'tokens.csv')).toThrow('tokens.csv:1: expected token,user,uid');
  });
});
