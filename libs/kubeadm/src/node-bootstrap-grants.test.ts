import { X509Certificate } from 'node:crypto';
import { request } from 'node:https';
import { createKubeletCsr } from '@constellation/keys';
import { waitFor } from '@constellation/testing';
import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrapTokenSecret, generateBootstrapToken } from './bootstrap-token.js';
import { startIsolatedCluster } from './isolated-cluster.fixture.js';
import type { IsolatedCluster } from './isolated-cluster.fixture.js';
import { NODE_CLIENT_BOOTSTRAP_BINDINGS, removeNodeClientBootstrapGrants } from './node-bootstrap-grants.js';

// Attacker 2: the owner of one genuine node reads the bootstrap token from its own join ticket and
// asks the cluster for a kubelet client certificate in another node's name. kubeadm's
// bootstrap-token phase lets any token of the default node group do that (ClusterRoleBindings
// kubeadm:kubelet-bootstrap and kubeadm:node-autoapprove-bootstrap, approved by csrapproving's
// sarapprove.go, which never compares the requester with the CSR's CN). Constellation's tickets
// carry the node's client certificate, so the bootstrapper deletes both bindings after init.
//
// A control plane of this file's own: the test deletes cluster-wide RBAC bindings.

let cluster: IsolatedCluster;
let token: string;

beforeAll(async () => {
  cluster = await startIsolatedCluster();
  // The token a JoinService minted into a node's ticket (default node group, as kubeadm expects).
  const ticketToken = generateBootstrapToken(15 * 60_000);
  await cluster.admin.makeApiClient(k8s.CoreV1Api).createNamespacedSecret({
    namespace: 'kube-system',
    body: bootstrapTokenSecret(ticketToken, 'join ticket for worker-1'),
  });
  token = ticketToken.token;
}, 120_000);

afterAll(async () => {
  await cluster.stop();
}, 60_000);

/** Posts a kubelet client CSR for `node` with the ticket's token: the status code and the body. */
async function askForClientCertificate(node: string, name: string): Promise<{ status: number; body: string }> {
  const { csrDer } = await createKubeletCsr(node, []);
  const pem = `-----BEGIN CERTIFICATE REQUEST-----\n${csrDer.toString('base64')}\n-----END CERTIFICATE REQUEST-----\n`;
  const url = `${cluster.controlPlane.apiServerUrl}/apis/certificates.k8s.io/v1/certificatesigningrequests`;
  const body = JSON.stringify({
    apiVersion: 'certificates.k8s.io/v1',
    kind: 'CertificateSigningRequest',
    metadata: { name },
    spec: {
      request: Buffer.from(pem).toString('base64'),
      signerName: 'kubernetes.io/kube-apiserver-client-kubelet',
      usages: ['digital signature', 'client auth'],
    },
  });
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        ca: cluster.controlPlane.caCertificatePem,
        timeout: 10_000,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, body: text });
        });
      },
    );
    req.once('timeout', () => req.destroy(new Error('the API server did not answer the CSR within 10 s')));
    req.once('error', reject);
    req.end(body);
  });
}

describe("kubeadm's kubelet TLS bootstrap grants (removed by Constellation after init)", () => {
  it("with kubeadm's bindings, a ticket token gets a client certificate in another node's name", async () => {
    expect((await askForClientCertificate('control-plane-0', 'steal-control-plane-0')).status).toBe(201);
    // kube-controller-manager's csrapproving approves it and csrsigning signs it: the attack works.
    const certificates = cluster.admin.makeApiClient(k8s.CertificatesV1Api);
    const signed = await waitFor(
      async () => {
        const csr = await certificates.readCertificateSigningRequest({ name: 'steal-control-plane-0' });
        return csr.status?.certificate === undefined ? undefined : csr;
      },
      { timeoutMs: 30_000, intervalMs: 250, description: 'the CSR to be approved and signed' },
    );
    expect(signed.spec.username).toMatch(/^system:bootstrap:[a-z0-9]{6}$/);
    expect(signed.status?.conditions?.map((c) => [c.type, c.reason])).toEqual([['Approved', 'AutoApproved']]);
    const issued = new X509Certificate(Buffer.from(signed.status?.certificate ?? '', 'base64').toString('utf8'));
    expect(issued.subject).toContain('CN=system:node:control-plane-0');
    expect(issued.subject).toContain('O=system:nodes');
  });

  it('after removeNodeClientBootstrapGrants the same token may not even post the CSR, and says why', async () => {
    const rbac = cluster.admin.makeApiClient(k8s.RbacAuthorizationV1Api);
    expect(await removeNodeClientBootstrapGrants(rbac)).toEqual(NODE_CLIENT_BOOTSTRAP_BINDINGS);
    const refused = await askForClientCertificate('control-plane-0', 'steal-again');
    expect(refused.status).toBe(403);
    const tokenId = token.split('.')[0] ?? '';
    expect((JSON.parse(refused.body) as { message: string }).message).toBe(
      `certificatesigningrequests.certificates.k8s.io is forbidden: User "system:bootstrap:${tokenId}" cannot create resource "certificatesigningrequests" in API group "certificates.k8s.io" at the cluster scope`,
    );
    // Idempotent: a second init step (or a retried one) finds nothing left to delete.
    expect(await removeNodeClientBootstrapGrants(rbac)).toEqual([]);
  });
});
