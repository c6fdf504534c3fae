// What a join ticket's credentials are worth to the real cluster: real kubeadm's file discovery
// trusts the API server by the ticket's CA and reads what a worker's join reads as the node, with
// the ticket's kubelet client certificate (no bootstrap token exists: the join writes nothing), and
// refuses an API server another CA signed; the kubelet certificate acts as its node and only as its
// node (the Node authorizer and NodeRestriction).
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runProgram } from '@constellation/process';
import { CertificateAuthority } from '@constellation/keys';
import { discoveryKubeconfig, joinConfiguration } from '@constellation/kubeadm';
import type { DiscoveryCredentials } from '@constellation/kubeadm';
import { MemoryLogger } from '@constellation/logger/testing';
import type { JoinTicket } from '@constellation/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubeletKubectl, nodeObject } from './kubelet-credentials.fixture.js';
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

describe('real kubeadm file discovery with a join ticket', () => {
  /** What the bootstrapper gives kubeadm from the ticket (join-client.ts). */
  const credentials = (ticket: JoinTicket, clientKeyPem: string): DiscoveryCredentials => ({
    apiServerEndpoint: ticket.apiServerEndpoint,
    caCertificatePem: ticket.clusterCaCert.toString(),
    clientCertificatePem: ticket.kubeletClientCert.toString(),
    clientKeyPem,
  });

  /**
   * Runs `kubeadm join phase preflight` with the JoinConfiguration and discovery file the
   * bootstrapper writes, chrooted (--rootfs) into an empty directory so that its node checks look at
   * nothing of this machine (they are only warnings here). It trusts the API server by the file's
   * CA, reads cluster-info and kubeadm-config as the node: all a worker's preflight does with the
   * API server.
   */
  async function discover(discovery: DiscoveryCredentials): Promise<string> {
    const rootfs = join(fixture.dir.path, `kubeadm-rootfs-${randomBytes(4).toString('hex')}`);
    await mkdir(rootfs);
    await writeFile(join(rootfs, 'discovery.conf'), discoveryKubeconfig(discovery), { mode: 0o600 });
    const config = joinConfiguration({ nodeName: 'worker-a', nodeIp: '10.42.0.21', discoveryFile: '/discovery.conf' });
    // kubeadm's discovery bound, shortened for the refusal.
    await writeFile(join(rootfs, 'join.yaml'), `${config}timeouts:\n  discovery: 5s\n`, { mode: 0o600 });
    const kubeadm = fixture.cluster.programs.path('kubeadm');
    const args = ['--rootfs', rootfs, 'join', 'phase', 'preflight', '--config', '/join.yaml'];
    return runProgram(kubeadm, [...args, '--ignore-preflight-errors=all', '-v=1'], { timeoutMs: 60_000 }).then(
      ({ stdout, stderr }) => `${stdout}\n${stderr}`,
      (error: unknown) => `failed: ${(error as { output?: string }).output ?? String(error)}`,
    );
  }

  it("trusts the API server by the ticket's CA and reads the cluster's configuration as the node", async () => {
    const output = await discover(credentials(joinedA.ticket, joinedA.clientKeyPem));
    expect(output).not.toMatch(/^failed/);
    expect(output).toContain(
      '[discovery] Using authentication credentials from the discovery file for validating TLS connection',
    );
    expect(output).toContain('[preflight] Reading configuration from the "kubeadm-config" ConfigMap');
  });

  it('refuses an API server whose certificate the ticket’s CA did not sign, in kubeadm’s words', async () => {
    const stranger = await CertificateAuthority.generate('not-the-cluster');
    const output = await discover({
      ...credentials(joinedA.ticket, joinedA.clientKeyPem),
      caCertificatePem: stranger.certificatePem,
    });
    expect(output).toMatch(/^failed/);
    expect(output).toContain('x509: certificate signed by unknown authority');
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
    const name = `unrelated-${randomBytes(4).toString('hex')}`;
    await fixture.cluster.core.createNamespacedSecret({
      namespace: 'kube-system',
      body: { metadata: { name }, stringData: { secret: 'not for nodes' } },
    });
    expect(await refusalOf(kubelet.run(['-n', 'kube-system', 'get', 'secret', name]))).toContain(
      `secrets "${name}" is forbidden: User "system:node:worker-a" cannot get resource "secrets" in API group "" in the namespace "kube-system": node: no relationship found between node 'worker-a' and this object`,
    );
  });
});
