// The JoinService's ServiceAccount may do exactly what deploy/joinservice/rbac.yaml grants, as the
// real API server's RBAC authorizer answers it (kubectl auth can-i with the account's own token).
// That the grants suffice is what every fixture's joins show: they run with this account.
import { join } from 'node:path';
import { Kubectl } from '@constellation/kubernetes-programs';
import { createTempDir } from '@constellation/testing';
import type { TempDir } from '@constellation/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JOIN_SERVICE_ACCOUNT, startJoinServiceCluster } from './join-service-cluster.fixture.js';
import type { JoinServiceCluster } from './join-service-cluster.fixture.js';
import { CLUSTER } from './join-service.fixture.js';

let dir: TempDir;
let cluster: JoinServiceCluster;
let service: Kubectl;

beforeAll(async () => {
  dir = await createTempDir('constellation-joinservice-rbac-');
  cluster = await startJoinServiceCluster(join(dir.path, 'control-plane'), { cluster: CLUSTER });
  const kubeconfig = join(dir.path, 'kubeconfig');
  await cluster.writeJoinServiceKubeconfig(kubeconfig);
  service = new Kubectl(cluster.programs, kubeconfig);
});

afterAll(async () => {
  await cluster.stop();
  await dir.remove();
});

/** [verb, resource, namespace or '' for cluster scope] */
type Row = [string, string, string];

const GRANTED: Row[] = [
  ['get', 'configmaps/constellation-cluster', 'kube-system'],
  ['create', 'configmaps', 'kube-system'], // bare metal: node name and address bindings
  ['get', 'configmaps/constellation-node-name-metal-1', 'kube-system'],
  ['create', 'leases.coordination.k8s.io', 'kube-system'],
  ['get', 'leases.coordination.k8s.io/constellation-control-plane-join', 'kube-system'],
  ['update', 'leases.coordination.k8s.io/constellation-control-plane-join', 'kube-system'],
  ['delete', 'leases.coordination.k8s.io/constellation-control-plane-join', 'kube-system'],
  ['get', 'nodes/control-plane-1', ''],
];

const REFUSED: Row[] = [
  // No Secrets at all: it mints no tokens (nodes join with their ticket's kubelet certificate),
  // and never reads the cluster's keys.
  ['create', 'secrets', 'kube-system'],
  ['delete', 'secrets', 'kube-system'],
  ['get', 'secrets', 'kube-system'],
  ['get', 'secrets/bootstrap-token-abcdef', 'kube-system'],
  ['list', 'secrets', 'kube-system'],
  ['watch', 'secrets', 'kube-system'],
  ['update', 'secrets', 'kube-system'],
  ['patch', 'secrets', 'kube-system'],
  // ConfigMaps: read and create, nothing else.
  ['list', 'configmaps', 'kube-system'],
  ['update', 'configmaps/constellation-cluster', 'kube-system'],
  ['delete', 'configmaps', 'kube-system'],
  // Only its own Lease, and not the control plane's.
  ['update', 'leases.coordination.k8s.io/kube-controller-manager', 'kube-system'],
  ['delete', 'leases.coordination.k8s.io/kube-scheduler', 'kube-system'],
  ['list', 'leases.coordination.k8s.io', 'kube-system'],
  // Nodes: get one by name.
  ['list', 'nodes', ''],
  ['patch', 'nodes', ''],
  ['delete', 'nodes', ''],
  // Nothing outside kube-system, and nothing else in it.
  ['create', 'secrets', 'default'],
  ['get', 'configmaps/constellation-cluster', 'default'],
  ['create', 'pods', 'kube-system'],
  ['create', 'serviceaccounts/token', 'kube-system'],
  ['create', 'certificatesigningrequests.certificates.k8s.io', ''],
  ['update', 'certificatesigningrequests.certificates.k8s.io/approval', ''],
  ['create', 'clusterrolebindings.rbac.authorization.k8s.io', ''],
];

const args = (namespace: string): string[] => (namespace === '' ? [] : ['-n', namespace]);

/**
 * `kubectl auth can-i` with the service's token: true for "yes", false for "no". kubectl exits 1
 * for "no" and may print a warning before it on stderr (cluster-scoped resources), so the answer
 * is the line that says it.
 */
async function canI(verb: string, resource: string, namespace: string): Promise<boolean> {
  try {
    return (await service.run(['auth', 'can-i', verb, resource, ...args(namespace)])).trim() === 'yes';
  } catch (error) {
    const output = (error as { output?: string }).output ?? '';
    if (output.split('\n').some((line) => /^no( - .*)?$/.test(line.trim()))) return false;
    throw error;
  }
}

describe('the join-service ServiceAccount against the real RBAC authorizer', () => {
  it('authenticates as the ServiceAccount the manifests bind', async () => {
    expect((await service.run(['auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}'])).trim()).toBe(
      JOIN_SERVICE_ACCOUNT,
    );
  });

  it.each(GRANTED)('may %s %s (namespace %j)', async (verb, resource, namespace) => {
    expect(await canI(verb, resource, namespace)).toBe(true);
  });

  it.each(REFUSED)('may not %s %s (namespace %j)', async (verb, resource, namespace) => {
    expect(await canI(verb, resource, namespace)).toBe(false);
  });

  it('is refused a Secret read by the API server itself, with RBAC’s reason', async () => {
    const refusal = await service.run(['-n', 'kube-system', 'get', 'secrets']).then(
      () => 'listed',
      (error: unknown) => (error as { output?: string }).output ?? String(error),
    );
    expect(refusal).toContain(
      `secrets is forbidden: User "${JOIN_SERVICE_ACCOUNT}" cannot list resource "secrets" in API group "" in the namespace "kube-system"`,
    );
  });

  it('is answered the same by the administrator’s kubectl impersonating it', async () => {
    const as = [`--as=${JOIN_SERVICE_ACCOUNT}`];
    expect(await cluster.admin.canI('create', 'leases.coordination.k8s.io', ['-n', 'kube-system', ...as])).toBe(true);
    expect(await cluster.admin.canI('create', 'secrets', ['-n', 'kube-system', ...as])).toBe(false);
  });
});
