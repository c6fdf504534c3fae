import { sleep } from '@constellation/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../kube-object-store.js';
import { kubectl, resourceType, startTestCluster } from './test-cluster.fixture.js';
import type { TestCluster } from './test-cluster.fixture.js';

/** What kubeadm writes for a bootstrap token (kube-system/bootstrap-token-<id>). */
function bootstrapTokenSecret(id: string, secret: string, expires: Date): KubeObject {
  const data = {
    'token-id': id,
    'token-secret': secret,
    expiration: expires.toISOString().replace(/\.\d{3}Z$/, 'Z'),
    'usage-bootstrap-authentication': 'true',
    'usage-bootstrap-signing': 'true',
    'auth-extra-groups': 'system:bootstrappers:kubeadm:default-node-token',
  };
  return {
    metadata: { name: `bootstrap-token-${id}` },
    type: 'bootstrap.kubernetes.io/token',
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
  };
}

function node(name: string, ready: boolean, labels: Record<string, string>): KubeObject {
  return {
    metadata: { name, labels: { 'kubernetes.io/hostname': name, ...labels } },
    status: {
      conditions: [{ type: 'Ready', status: ready ? 'True' : 'False', reason: 'KubeletReady' }],
      nodeInfo: { kubeletVersion: 'v1.32.9' },
      addresses: [{ type: 'InternalIP', address: '10.9.0.2' }],
    },
  };
}

/** How kubectl reports a 401 answered to its discovery requests (client-go's wording). */
const LOGIN_REQUIRED =
  'error: You must be logged in to the server (the server has asked for the client to provide credentials)';

/** kubectl's table output as rows of whitespace-separated cells. */
const rows = (stdout: Buffer): string[][] =>
  stdout
    .toString()
    .trim()
    .split('\n')
    .map((line) => line.trim().split(/\s+/));

let cluster: TestCluster;
let admin: string;

beforeAll(async () => {
  cluster = await startTestCluster();
  const { store } = cluster.api;
  store.create(
    resourceType('nodes'),
    undefined,
    node('control-plane-1', true, { 'node-role.kubernetes.io/control-plane': '' }),
  );
  store.create(resourceType('nodes'), undefined, node('worker-1', true, {}));
  store.create(resourceType('nodes'), undefined, node('worker-2', false, {}));
  store.create(
    resourceType('secrets'),
    'kube-system',
    bootstrapTokenSecret('abcdef', '0123456789abcdef', new Date(Date.now() + 3600_000)),
  );
  store.create(resourceType('leases'), 'kube-system', {
    metadata: { name: 'constellation-control-plane-join' },
    spec: { holderIdentity: 'control-plane-2', leaseDurationSeconds: 600 },
  });
  store.create(resourceType('configmaps'), 'kube-system', {
    metadata: { name: 'kubeadm-config' },
    data: { a: '1', b: '2' },
  });
  // kubeadm >= 1.29 admin.conf: O=kubeadm:cluster-admins, bound to cluster-admin.
  admin = await cluster.writeKubeconfig('kubernetes-admin', {
    client: await cluster.issueClient('kubernetes-admin', ['kubeadm:cluster-admins']),
  });
});

afterAll(async () => {
  await cluster.close();
});

describe('real kubectl against the API stand-in, as cluster admin', () => {
  it('get nodes: STATUS from the Ready condition, ROLES from node-role labels, VERSION from nodeInfo (printers.go printNode)', async () => {
    const result = await kubectl(cluster, admin, ['get', 'nodes']);
    expect(result.stderr).toBe('');
    expect(rows(result.stdout)).toEqual([
      ['NAME', 'STATUS', 'ROLES', 'AGE', 'VERSION'],
      ['control-plane-1', 'Ready', 'control-plane', expect.stringMatching(/^\d+s$/), 'v1.32.9'],
      ['worker-1', 'Ready', '<none>', expect.stringMatching(/^\d+s$/), 'v1.32.9'],
      ['worker-2', 'NotReady', '<none>', expect.stringMatching(/^\d+s$/), 'v1.32.9'],
    ]);
  });

  it('get nodes -o wide adds the priority-1 columns', async () => {
    const result = await kubectl(cluster, admin, ['get', 'nodes', '-o', 'wide']);
    expect(rows(result.stdout)[0]).toEqual([
      'NAME',
      'STATUS',
      'ROLES',
      'AGE',
      'VERSION',
      'INTERNAL-IP',
      'EXTERNAL-IP',
      'OS-IMAGE',
      'KERNEL-VERSION',
      'CONTAINER-RUNTIME',
    ]);
    expect(rows(result.stdout)[1]?.slice(5, 7)).toEqual(['10.9.0.2', '<none>']);
  });

  it('get secrets -n kube-system: NAME TYPE DATA AGE, the bootstrap tokens listed', async () => {
    const result = await kubectl(cluster, admin, ['get', 'secrets', '-n', 'kube-system']);
    expect(result.stderr).toBe('');
    const table = rows(result.stdout);
    expect(table[0]).toEqual(['NAME', 'TYPE', 'DATA', 'AGE']);
    expect(table.slice(1).map((row) => row.slice(0, 3))).toEqual([
      ['bootstrap-token-abcdef', 'bootstrap.kubernetes.io/token', '6'],
    ]);
  });

  it('get leases -A: the NAMESPACE column and the holder (all-namespaces list)', async () => {
    const result = await kubectl(cluster, admin, ['get', 'leases', '-A']);
    expect(result.stderr).toBe('');
    const table = rows(result.stdout);
    expect(table[0]).toEqual(['NAMESPACE', 'NAME', 'HOLDER', 'AGE']);
    expect(table.slice(1).map((row) => row.slice(0, 3))).toEqual([
      ['kube-system', 'constellation-control-plane-join', 'control-plane-2'],
    ]);
  });

  it('get configmaps and namespaces with their columns, a single object by short name', async () => {
    expect(
      rows((await kubectl(cluster, admin, ['get', 'cm', '-n', 'kube-system'])).stdout).map((r) => r.slice(0, 2)),
    ).toEqual([
      ['NAME', 'DATA'],
      ['kubeadm-config', '2'],
    ]);
    const namespaces = rows((await kubectl(cluster, admin, ['get', 'ns'])).stdout);
    expect(namespaces[0]).toEqual(['NAME', 'STATUS', 'AGE']);
    expect(namespaces.map((r) => r[0])).toContain('kube-node-lease');
    expect(rows((await kubectl(cluster, admin, ['get', 'node', 'worker-2'])).stdout)[1]?.slice(0, 2)).toEqual([
      'worker-2',
      'NotReady',
    ]);
  });

  it('reads objects as JSON, reports the server version and 404s a group version it does not serve', async () => {
    const json = await kubectl(cluster, admin, [
      'get',
      'lease',
      '-n',
      'kube-system',
      'constellation-control-plane-join',
      '-o',
      'jsonpath={.spec.holderIdentity}',
    ]);
    expect(json.stdout.toString()).toBe('control-plane-2');
    expect((await kubectl(cluster, admin, ['version'])).stdout.toString()).toContain('Server Version: v1.32.9');
    const unknown = await kubectl(cluster, admin, ['get', '--raw', '/apis/apps/v1']);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain('NotFound');
  });
});

describe('real kubectl refused like kube-apiserver refuses it', () => {
  it('no credentials: 401 Unauthorized (anonymous is only served the public endpoints)', async () => {
    const anonymous = await cluster.writeKubeconfig('nobody', {});
    // kubectl prompts (on a terminal) for a user name and password when the kubeconfig has no
    // credentials; given as flags instead, it sends basic auth, which authenticates nobody on
    // kube-apiserver since 1.19: the request is anonymous.
    const result = await kubectl(cluster, anonymous, ['get', 'nodes', '--username=nobody', '--password=nothing']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(LOGIN_REQUIRED);
  });

  it("a worker's kubelet certificate listing secrets: 403 with the real message and the Node authorizer's reason", async () => {
    const kubelet = await cluster.writeKubeconfig('system:node:worker-1', {
      client: await cluster.issueClient('system:node:worker-1', ['system:nodes']),
    });
    const result = await kubectl(cluster, kubelet, ['get', 'secrets', '-n', 'kube-system']);
    expect(result.code).toBe(1);
    // responsewriters/errors.go forbiddenMessage + node_authorizer.go authorize ("No Object name found").
    expect(result.stderr.trim()).toBe(
      'Error from server (Forbidden): secrets is forbidden: User "system:node:worker-1" cannot list resource "secrets" in API group "" in the namespace "kube-system": No Object name found',
    );
    const own = await kubectl(cluster, kubelet, ['get', 'node', 'worker-1']);
    expect(own.stderr).toBe('');
    const other = await kubectl(cluster, kubelet, ['get', 'node', 'control-plane-1']);
    expect(other.stderr).toContain(
      'nodes "control-plane-1" is forbidden: User "system:node:worker-1" cannot get resource "nodes"',
    );
  });

  it('bootstrap token (bootstrap.go): valid gets a node (kubeadm:get-nodes), cannot list secrets; expired is 401', async () => {
    const valid = await cluster.writeKubeconfig('tls-bootstrap', { token: 'abcdef.0123456789abcdef' });
    expect((await kubectl(cluster, valid, ['get', 'node', 'control-plane-1'])).stderr).toBe('');
    expect((await kubectl(cluster, valid, ['get', 'secrets', '-n', 'kube-system'])).stderr).toContain(
      'User "system:bootstrap:abcdef" cannot list resource "secrets"',
    );
    // The same kind of token, valid until shortly: accepted, then 401 once the expiry has passed
    // (the authenticator checks expiration; the token cleaner also deletes the Secret).
    const expires = new Date(Date.now() + 1_500);
    cluster.api.store.create(
      resourceType('secrets'),
      'kube-system',
      bootstrapTokenSecret('shortt', '0123456789abcdef', expires),
    );
    const expiring = await cluster.writeKubeconfig('tls-bootstrap', { token: 'shortt.0123456789abcdef' });
    expect((await kubectl(cluster, expiring, ['get', 'node', 'control-plane-1'])).stderr).toBe('');
    await sleep(Math.max(0, expires.getTime() - Date.now()) + 100);
    const result = await kubectl(cluster, expiring, ['get', 'node', 'control-plane-1']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('error: You must be logged in to the server (Unauthorized)');
  });

  it('a client certificate from another CA is 401, not anonymous (x509 authenticator)', async () => {
    const other = await startTestCluster();
    try {
      const foreign = await cluster.writeKubeconfig('kubernetes-admin', {
        client: await other.issueClient('kubernetes-admin', ['system:masters']),
      });
      const result = await kubectl(cluster, foreign, ['get', 'nodes']);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(LOGIN_REQUIRED);
    } finally {
      await other.close();
    }
  });
});
