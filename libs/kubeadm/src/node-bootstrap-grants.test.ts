import { CertificateAuthority, createKubeletCsr } from '@constellation/keys';
import { KubeApiServer } from '@constellation/sandbox';
import * as k8s from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { bootstrapTokenSecret, generateBootstrapToken } from './bootstrap-token.js';
import { NODE_CLIENT_BOOTSTRAP_BINDINGS, removeNodeClientBootstrapGrants } from './node-bootstrap-grants.js';

// Attacker 2: the owner of one genuine node reads the bootstrap token from its own join ticket and
// asks the cluster for a kubelet client certificate in another node's name. kubeadm's
// bootstrap-token phase lets any token of the default node group do that (ClusterRoleBindings
// kubeadm:kubelet-bootstrap and kubeadm:node-autoapprove-bootstrap, approved by csrapproving's
// sarapprove.go, which never compares the requester with the CSR's CN). Constellation's tickets
// carry the node's client certificate, so the bootstrapper deletes both bindings after init.

const servers: KubeApiServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

const ADMIN_TOKEN = 'admin-token-for-this-test-only';

async function cluster(): Promise<{ api: KubeApiServer; rbac: k8s.RbacAuthorizationV1Api; token: string }> {
  const { ca } = await CertificateAuthority.generate('kubernetes');
  const api = await KubeApiServer.start({
    clusterCa: ca,
    authentication: {
      bootstrapTokens: true,
      staticTokens: [{ token: ADMIN_TOKEN, user: 'kubernetes-admin', uid: 'admin', groups: ['system:masters'] }],
    },
  });
  servers.push(api);
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'test', server: api.url, skipTLSVerify: true }],
    users: [{ name: 'admin', token: ADMIN_TOKEN }],
    contexts: [{ name: 'test', cluster: 'test', user: 'admin' }],
    currentContext: 'test',
  });
  // The token a JoinService minted into a node's ticket (default node group, as kubeadm expects).
  const ticketToken = generateBootstrapToken(15 * 60_000);
  await kc.makeApiClient(k8s.CoreV1Api).createNamespacedSecret({
    namespace: 'kube-system',
    body: bootstrapTokenSecret(ticketToken, 'join ticket for worker-1'),
  });
  return { api, rbac: kc.makeApiClient(k8s.RbacAuthorizationV1Api), token: ticketToken.token };
}

/** Posts a kubelet client CSR for `node` with `token`; the status code and, when signed, the CN. */
async function askForClientCertificate(
  api: KubeApiServer,
  token: string,
  node: string,
): Promise<{ status: number; body: string }> {
  const { csrDer } = await createKubeletCsr(node, []);
  const pem = `-----BEGIN CERTIFICATE REQUEST-----\n${csrDer.toString('base64')}\n-----END CERTIFICATE REQUEST-----\n`;
  const res = await fetch(`${api.url}/apis/certificates.k8s.io/v1/certificatesigningrequests`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({
      metadata: { name: `steal-${node}` },
      spec: {
        request: Buffer.from(pem).toString('base64'),
        signerName: 'kubernetes.io/kube-apiserver-client-kubelet',
        usages: ['digital signature', 'client auth'],
      },
    }),
  });
  return { status: res.status, body: await res.text() };
}

describe("kubeadm's kubelet TLS bootstrap grants (removed by Constellation after init)", () => {
  it("with kubeadm's bindings, a ticket token may ask for another node's client certificate", async () => {
    const { api, token } = await cluster();
    expect((await askForClientCertificate(api, token, 'control-plane-0')).status).toBe(201);
  });

  it('after removeNodeClientBootstrapGrants the same token may not even post the CSR, and says why', async () => {
    const { api, rbac, token } = await cluster();
    expect(await removeNodeClientBootstrapGrants(rbac)).toEqual(NODE_CLIENT_BOOTSTRAP_BINDINGS);
    const refused = await askForClientCertificate(api, token, 'control-plane-0');
    expect(refused.status).toBe(403);
    expect(refused.body).toContain(
      'cannot create resource \\"certificatesigningrequests\\" in API group \\"certificates.k8s.io\\"',
    );
    // Idempotent: a second init step (or a retried one) finds nothing left to delete.
    expect(await removeNodeClientBootstrapGrants(rbac)).toEqual([]);
  });
});
