// What a join ticket's credentials are worth to the real cluster: its bootstrap token authenticates
// to kube-apiserver in kubeadm's node group, real kubeadm's discovery trusts the API server with the
// token and the ticket's CA pin (and refuses a wrong pin), and its kubelet certificate acts as its
// node and only as its node (the Node authorizer and NodeRestriction).
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runProgram } from '@constellation/process';
import { joinConfiguration } from '@constellation/kubeadm';
import { MemoryLogger } from '@constellation/logger/testing';
import type { JoinTicket } from '@constellation/proto';
import { waitFor } from '@constellation/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrapTokenKubectl, kubeletKubectl, nodeObject } from './kubelet-credentials.fixture.js';
import { startJoinFixture } from './join-service.fixture.js';
import type { JoinFixture, SimulatedNode } from './join-service.fixture.js';

let fixture: JoinFixture;
let nodeA: SimulatedNode;
let nodeB: SimulatedNode;
let joinedA: { ticket: JoinTicket; clientKeyPem: string };
let joinedB: { ticket: JoinTicket; clientKeyPem: string };

beforeAll(async () => {
  fixture = await startJoinFixture(new MemoryLogger());
  [nodeA, nodeB] = await Promise.all([fixture.node('worker-a', '10.42.0.21'), fixture.node('worker-b', '10.42.0.22')]);
  joinedA = await nodeA.requestJoin(fixture.client);
  joinedB = await nodeB.requestJoin(fixture.client);
});

afterAll(async () => {
  await Promise.all([nodeA.stop(), nodeB.stop()]);
  await fixture.close();
});

/** What a refused kubectl said (its stderr), or "allowed" when it was not refused. */
function refusalOf(run: Promise<string>): Promise<string> {
  return run.then(
    () => 'allowed',
    (error: unknown) => (error as { output?: string }).output ?? String(error),
  );
}

describe("a join ticket's bootstrap token", () => {
  it('authenticates to kube-apiserver as system:bootstrap:<id> in kubeadm’s node group', async () => {
    const [id] = joinedA.ticket.token.split('.');
    const token = await bootstrapTokenKubectl(fixture, joinedA.ticket.token);
    const review = await token.json<{ status: { userInfo: { username: string; groups: string[] } } }>([
      'auth',
      'whoami',
    ]);
    expect(review.status.userInfo.username).toBe(`system:bootstrap:${id ?? ''}`);
    expect(review.status.userInfo.groups).toEqual(
      expect.arrayContaining(['system:bootstrappers', 'system:bootstrappers:kubeadm:default-node-token']),
    );
    // What kubeadm's RBAC gives that group: a kubelet's TLS bootstrap, nothing of the cluster's secrets.
    expect(await token.canI('create', 'certificatesigningrequests.certificates.k8s.io')).toBe(true);
    expect(await token.canI('get', 'secrets', ['-n', 'kube-system'])).toBe(false);
  });

  it('is refused once its secret half is wrong', async () => {
    const [id] = joinedA.ticket.token.split('.');
    const forged = await bootstrapTokenKubectl(fixture, `${id ?? ''}.${'0'.repeat(16)}`);
    expect(await refusalOf(forged.run(['auth', 'whoami']))).toContain(
      'error: You must be logged in to the server (Unauthorized)',
    );
  });
});

describe('real kubeadm discovery with a join ticket', () => {
  /**
   * Runs `kubeadm join phase preflight` with the JoinConfiguration the bootstrapper writes, chrooted
   * (--rootfs) into an empty directory so that its node checks look at nothing of this machine
   * (they are only warnings here). It discovers the cluster (cluster-info, its JWS signature by
   * the token, the CA against the pins) and reads kubeadm-config with the token: that is all a
   * worker's preflight does with the API server.
   */
  async function discover(ticket: JoinTicket, caCertHashes: readonly string[], token = ticket.token): Promise<string> {
    const rootfs = join(fixture.dir.path, `kubeadm-rootfs-${randomBytes(4).toString('hex')}`);
    await mkdir(rootfs);
    const config = joinConfiguration({
      nodeName: 'worker-a',
      nodeIp: '10.42.0.21',
      apiServerEndpoint: ticket.apiServerEndpoint,
      token,
      caCertHashes,
    });
    await writeFile(join(rootfs, 'join.yaml'), config, { mode: 0o600 });
    const kubeadm = fixture.cluster.programs.path('kubeadm');
    const args = ['--rootfs', rootfs, 'join', 'phase', 'preflight', '--config', '/join.yaml'];
    return runProgram(kubeadm, [...args, '--ignore-preflight-errors=all', '-v=1'], { timeoutMs: 60_000 }).then(
      ({ stdout, stderr }) => `${stdout}\n${stderr}`,
      (error: unknown) => `failed: ${(error as { output?: string }).output ?? String(error)}`,
    );
  }

  beforeAll(async () => {
    // The real bootstrap signer (kube-controller-manager) signs cluster-info for each new token.
    const [id] = joinedA.ticket.token.split('.');
    await waitFor(
      async () =>
        (await fixture.cluster.core.readNamespacedConfigMap({ namespace: 'kube-public', name: 'cluster-info' })).data?.[
          `jws-kubeconfig-${id ?? ''}`
        ] !== undefined,
      { timeoutMs: 30_000, description: "the bootstrap signer to sign cluster-info for the ticket's token" },
    );
  });

  it("trusts the API server with the ticket's token and CA pin", async () => {
    const output = await discover(joinedA.ticket, [joinedA.ticket.discoveryTokenCaCertHash]);
    expect(output).not.toMatch(/^failed/);
    expect(output).toContain(
      `Cluster info signature and contents are valid and TLS certificate validates against pinned roots, will use API Server "${joinedA.ticket.apiServerEndpoint}"`,
    );
  });

  it('refuses an API server whose CA is not the pinned one, in kubeadm’s words', async () => {
    const wrongPin = `sha256:${randomBytes(32).toString('hex')}`;
    const output = await discover(joinedA.ticket, [wrongPin]);
    expect(output).toMatch(/^failed/);
    expect(output).toContain(
      `couldn't validate the identity of the API Server: cluster CA found in cluster-info ConfigMap is invalid: none of the public keys "${joinedA.ticket.discoveryTokenCaCertHash}" are pinned`,
    );
  });

  it('refuses cluster-info whose signature the token does not verify', async () => {
    const [id] = joinedA.ticket.token.split('.');
    const output = await discover(
      joinedA.ticket,
      [joinedA.ticket.discoveryTokenCaCertHash],
      `${id ?? ''}.${'0'.repeat(16)}`,
    );
    expect(output).toMatch(/^failed/);
    expect(output).toContain(
      "failed to verify JWS signature of received cluster info object, can't trust this API Server",
    );
  });
});

describe("a join ticket's kubelet client certificate", () => {
  it('acts as its node: the kubelet registers its own Node and reads it', async () => {
    const kubelet = await kubeletKubectl(fixture, joinedA);
    expect((await kubelet.run(['auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}'])).trim()).toBe(
      'system:node:worker-a',
    );
    await kubelet.run(['create', '-f', '-'], JSON.stringify(nodeObject('worker-a')));
    await (await kubeletKubectl(fixture, joinedB)).run(['create', '-f', '-'], JSON.stringify(nodeObject('worker-b')));
    expect((await kubelet.run(['get', 'node', 'worker-a', '-o', 'jsonpath={.metadata.name}'])).trim()).toBe('worker-a');
  });

  it('may read and change its own Node only (the Node authorizer, NodeRestriction)', async () => {
    const kubelet = await kubeletKubectl(fixture, joinedA);
    // kube-apiserver 1.37's Node authorizer lets a node read its own Node object and no other.
    expect(await refusalOf(kubelet.run(['get', 'node', 'worker-b']))).toContain(
      `nodes "worker-b" is forbidden: User "system:node:worker-a" cannot get resource "nodes" in API group "" at the cluster scope: node: node 'worker-a' cannot read 'worker-b', only its own Node object`,
    );
    // A write that reads nothing first (the resourceVersion given, as the administrator reads it):
    // worker-b's status reported by worker-a, which NodeRestriction refuses; and worker-b deleted.
    const current = await fixture.cluster.core.readNode({ name: 'worker-b' });
    const hijacked = {
      ...nodeObject('worker-b'),
      metadata: { name: 'worker-b', resourceVersion: current.metadata?.resourceVersion },
      status: { conditions: [{ type: 'Ready', status: 'False', reason: 'Hijacked', message: 'by worker-a' }] },
    };
    expect(
      await refusalOf(kubelet.run(['replace', '--subresource=status', '-f', '-'], JSON.stringify(hijacked))),
    ).toContain('nodes "worker-b" is forbidden: node "worker-a" is not allowed to modify node "worker-b"');
    expect(await refusalOf(kubelet.run(['delete', 'node', 'worker-b', '--wait=false']))).toContain(
      // Refused by the authorizers already, before NodeRestriction sees it.
      'nodes "worker-b" is forbidden: User "system:node:worker-a" cannot delete resource "nodes" in API group "" at the cluster scope',
    );
    const after = await fixture.cluster.core.readNode({ name: 'worker-b' });
    expect(after.status?.conditions?.map((c) => c.reason) ?? []).not.toContain('Hijacked');
    // Its own Node's status it reports, the same way.
    const own = await fixture.cluster.core.readNode({ name: 'worker-a' });
    const report = {
      ...nodeObject('worker-a'),
      metadata: { name: 'worker-a', resourceVersion: own.metadata?.resourceVersion },
      status: { conditions: [{ type: 'Ready', status: 'False', reason: 'OwnReport', message: 'by worker-a' }] },
    };
    await kubelet.run(['replace', '--subresource=status', '-f', '-'], JSON.stringify(report));
    const reported = await fixture.cluster.core.readNode({ name: 'worker-a' });
    expect(reported.status?.conditions?.map((c) => c.reason) ?? []).toContain('OwnReport');
  });

  it('may not read a Secret no pod of its node refers to (the Node authorizer)', async () => {
    const kubelet = await kubeletKubectl(fixture, joinedA);
    const [id] = joinedB.ticket.token.split('.');
    expect(
      await refusalOf(kubelet.run(['-n', 'kube-system', 'get', 'secret', `bootstrap-token-${id ?? ''}`])),
    ).toContain(
      `secrets "bootstrap-token-${id ?? ''}" is forbidden: User "system:node:worker-a" cannot get resource "secrets" in API group "" in the namespace "kube-system": node: no relationship found between node 'worker-a' and this object`,
    );
  });
});
