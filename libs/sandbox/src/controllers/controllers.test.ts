import { X509Certificate, randomBytes } from 'node:crypto';
import { CertificateAuthority, createKubeletCsr } from '@constellation/keys';
import { afterEach, describe, expect, it } from 'vitest';
import { computeDetachedSignature, detachedTokenIsValid } from '../bootstrap-jws.js';
import { KubeApiServer } from '../kube-api-server.js';
import type { KubeObject } from '../kube-object-store.js';

// The kube-controller-manager parts the API stand-in runs (controllers/), checked against the
// Kubernetes sources they follow.

const servers: KubeApiServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function server(): Promise<KubeApiServer> {
  const api = await KubeApiServer.start();
  servers.push(api);
  return api;
}

const SECRETS = { group: '', version: 'v1', resource: 'secrets', kind: 'Secret', namespaced: true };
const CONFIGMAPS = { group: '', version: 'v1', resource: 'configmaps', kind: 'ConfigMap', namespaced: true };

function tokenSecret(id: string, secret: string, fields: Record<string, string>): KubeObject {
  const data = { 'token-id': id, 'token-secret': secret, ...fields };
  return {
    metadata: { name: `bootstrap-token-${id}` },
    type: 'bootstrap.kubernetes.io/token',
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
  };
}

async function eventually<T>(read: () => T, until: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const value = read();
    if (until(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('detached JWS (k8s.io/cluster-bootstrap/token/jws)', () => {
  it("computes jws_test.go's known answers", () => {
    const content = 'Hello from the other side. I must have called a thousand times.';
    expect(computeDetachedSignature(content, 'joshua', 'my voice is my passcode')).toBe(
      'eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..VShe2taLd-YTrmWuRkcL_8QTNDHYxQIEBsAYYiIj1_8',
    );
    expect(computeDetachedSignature('', 'joshua', 'my voice is my passcode')).toBe(
      'eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..7Ui1ALizW4jXphVUB7xUqC9vLYLL9RZeOFfVLoB7Tgk',
    );
    expect(computeDetachedSignature(content, 'joshua', '')).toBe(
      'eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..UfkqvDGiIFxrMnFseDj9LYJOLNrvjW8aHhF71mvvAs8',
    );
    const sig = computeDetachedSignature(content, 'joshua', 'my voice is my passcode');
    expect(detachedTokenIsValid(sig, content, 'joshua', 'my voice is my passcode')).toBe(true);
    expect(detachedTokenIsValid(`${sig}foo`, content, 'joshua', 'my voice is my passcode')).toBe(false);
  });
});

describe('bootstrapsigner and tokencleaner (pkg/controller/bootstrap)', () => {
  it('signs cluster-info for valid signing tokens only, and drops signatures of removed ones', async () => {
    const api = await server();
    api.store.create(CONFIGMAPS, 'kube-public', { metadata: { name: 'cluster-info' }, data: { kubeconfig: 'cfg' } });
    const later = new Date(Date.now() + 3600_000).toISOString();
    api.store.create(
      SECRETS,
      'kube-system',
      tokenSecret('aaaaaa', 'a'.repeat(16), { 'usage-bootstrap-signing': 'true', expiration: later }),
    );
    api.store.create(
      SECRETS,
      'kube-system',
      tokenSecret('bbbbbb', 'b'.repeat(16), { 'usage-bootstrap-authentication': 'true' }),
    );
    const info = (): Record<string, string> =>
      api.store.get(CONFIGMAPS, 'kube-public', 'cluster-info')['data'] as Record<string, string>;
    const signed = await eventually(info, (d) => d['jws-kubeconfig-aaaaaa'] !== undefined);
    expect(signed['jws-kubeconfig-aaaaaa']).toBe(computeDetachedSignature('cfg', 'aaaaaa', 'a'.repeat(16)));
    expect(signed['jws-kubeconfig-bbbbbb']).toBeUndefined(); // no usage-bootstrap-signing
    // A forged signature is replaced, as the signer reconciles the ConfigMap it owns.
    const current = api.store.get(CONFIGMAPS, 'kube-public', 'cluster-info');
    api.store.replace(CONFIGMAPS, 'kube-public', 'cluster-info', {
      ...current,
      data: { ...signed, 'jws-kubeconfig-aaaaaa': 'forged' },
    });
    expect((await eventually(info, (d) => d['jws-kubeconfig-aaaaaa'] !== 'forged'))['jws-kubeconfig-aaaaaa']).toBe(
      signed['jws-kubeconfig-aaaaaa'],
    );
    api.store.delete(SECRETS, 'kube-system', 'bootstrap-token-aaaaaa');
    expect(await eventually(info, (d) => d['jws-kubeconfig-aaaaaa'] === undefined)).toEqual({ kubeconfig: 'cfg' });
  });

  it('deletes expired token Secrets (tokencleaner) and never signs for them', async () => {
    const api = await server();
    api.store.create(CONFIGMAPS, 'kube-public', { metadata: { name: 'cluster-info' }, data: { kubeconfig: 'cfg' } });
    const past = new Date(Date.now() - 1_000).toISOString();
    api.store.create(
      SECRETS,
      'kube-system',
      tokenSecret('cccccc', 'c'.repeat(16), { 'usage-bootstrap-signing': 'true', expiration: past }),
    );
    const gone = await eventually(
      () => api.store.list(SECRETS, 'kube-system').items.length,
      (n) => n === 0,
    );
    expect(gone).toBe(0);
    expect(api.store.get(CONFIGMAPS, 'kube-public', 'cluster-info')['data']).toEqual({ kubeconfig: 'cfg' });
  });

  it('without cluster-info still deletes a token Secret that arrives expired, and one that expires later', async () => {
    // tokencleaner queues each changed Secret and re-queues it for its expiry (tokencleaner.go
    // evalSecret: AddAfter the time left); nothing there depends on cluster-info.
    const api = await server();
    const names = (): string[] => api.store.list(SECRETS, 'kube-system').items.map((s) => s.metadata.name);
    api.store.create(
      SECRETS,
      'kube-system',
      tokenSecret('eeeeee', 'e'.repeat(16), { expiration: new Date(Date.now() + 400).toISOString() }),
    );
    api.store.create(
      SECRETS,
      'kube-system',
      tokenSecret('dddddd', 'd'.repeat(16), { expiration: new Date(Date.now() - 1_000).toISOString() }),
    );
    expect(await eventually(names, (n) => !n.includes('bootstrap-token-dddddd'))).toEqual(['bootstrap-token-eeeeee']);
    expect(await eventually(names, (n) => n.length === 0)).toEqual([]);
    // A token Secret elsewhere is not the cleaner's: NewTokenCleaner's FilterFunc takes only
    // bootstrap-token Secrets whose Namespace is tokenSecretNamespace (kube-system).
    api.store.create(
      SECRETS,
      'default',
      tokenSecret('ffffff', 'f'.repeat(16), { expiration: new Date(Date.now() - 1_000).toISOString() }),
    );
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    expect(api.store.list(SECRETS, 'default').items.map((s) => s.metadata.name)).toEqual(['bootstrap-token-ffffff']);
  });
});

describe('csrapproving and csrsigning for kubelet client certificates (pkg/controller/certificates)', () => {
  async function csrServer(): Promise<{
    api: KubeApiServer;
    post: (
      token: string,
      csrDer: Buffer,
      spec?: { usages?: string[]; expirationSeconds?: number },
      pem?: string,
    ) => Promise<number>;
  }> {
    const { ca } = await CertificateAuthority.generate('kubernetes');
    const api = await KubeApiServer.start({ clusterCa: ca, authentication: { bootstrapTokens: true } });
    servers.push(api);
    const post = async (
      token: string,
      csrDer: Buffer,
      spec: { usages?: string[]; expirationSeconds?: number } = {},
      pem = `-----BEGIN CERTIFICATE REQUEST-----\n${csrDer.toString('base64')}\n-----END CERTIFICATE REQUEST-----\n`,
    ): Promise<number> => {
      const res = await fetch(`${api.url}/apis/certificates.k8s.io/v1/certificatesigningrequests`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({
          metadata: { name: `csr-${token.slice(0, 6)}-${csrDer.length}-${randomBytes(4).toString('hex')}` },
          spec: {
            request: Buffer.from(pem).toString('base64'),
            signerName: 'kubernetes.io/kube-apiserver-client-kubelet',
            usages: ['digital signature', 'client auth'],
            username: 'system:node:forged', // the server records the authenticated user instead
            ...spec,
          },
        }),
      });
      return res.status;
    };
    return { api, post };
  }
  const CSRS = {
    group: 'certificates.k8s.io',
    version: 'v1',
    resource: 'certificatesigningrequests',
    kind: 'CertificateSigningRequest',
    namespaced: false,
  };
  const nodeToken = (id: string, group: string): KubeObject =>
    tokenSecret(id, 'x'.repeat(16), { 'usage-bootstrap-authentication': 'true', 'auth-extra-groups': group });

  it('approves and signs a kubelet client CSR from a node-group token; records the real requester', async () => {
    const { api, post } = await csrServer();
    api.store.create(SECRETS, 'kube-system', nodeToken('nodeaa', 'system:bootstrappers:kubeadm:default-node-token'));
    const { csrDer } = await createKubeletCsr('worker-1', []);
    expect(await post(`nodeaa.${'x'.repeat(16)}`, csrDer)).toBe(201);
    const csr = await eventually(
      () => api.store.list(CSRS, undefined).items[0],
      (c) => (c?.['status'] as { certificate?: string } | undefined)?.certificate !== undefined,
    );
    expect((csr?.['spec'] as { username?: string }).username).toBe('system:bootstrap:nodeaa');
    const cert = new X509Certificate(
      Buffer.from((csr?.['status'] as { certificate: string }).certificate, 'base64').toString(),
    );
    expect(cert.subject.split('\n')).toEqual(['O=system:nodes', 'CN=system:node:worker-1']);
    expect(cert.subjectAltName).toBeUndefined();
  });

  it('a token outside kubeadm node group may not even post a CSR; a CSR with IP SANs is never approved', async () => {
    const { api, post } = await csrServer();
    api.store.create(SECRETS, 'kube-system', nodeToken('initaa', 'system:bootstrappers:constellation:init-only'));
    api.store.create(SECRETS, 'kube-system', nodeToken('nodebb', 'system:bootstrappers:kubeadm:default-node-token'));
    const { csrDer } = await createKubeletCsr('worker-1', []);
    expect(await post(`initaa.${'x'.repeat(16)}`, csrDer)).toBe(403);
    const withIps = await createKubeletCsr('worker-2', ['10.0.0.2']);
    expect(await post(`nodebb.${'x'.repeat(16)}`, withIps.csrDer)).toBe(201);
    // A valid request posted after it is signed: the controller has looked at both by then.
    const valid = await createKubeletCsr('worker-3', []);
    expect(await post(`nodebb.${'x'.repeat(16)}`, valid.csrDer)).toBe(201);
    const status = (c: KubeObject | undefined): { certificate?: string } | undefined =>
      c?.['status'] as { certificate?: string } | undefined;
    const items = await eventually(
      () => api.store.list(CSRS, undefined).items,
      (list) => list.some((c) => status(c)?.certificate !== undefined),
    );
    expect(items.map((c) => status(c)?.certificate !== undefined).sort()).toEqual([false, true]);
    const sanRequest = items.find((c) => status(c)?.certificate === undefined);
    expect(Buffer.from((sanRequest?.['spec'] as { request: string }).request, 'base64').toString()).toContain(
      withIps.csrDer.toString('base64').slice(0, 40),
    );
  });

  // pkg/apis/certificates/helpers.go ValidateKubeletClientCSR, asked by sarapprove.go
  // isNodeClientCert: the usages must be exactly {digital signature, client auth} or those with
  // key encipherment; any other set (client auth alone, or with key encipherment only) is not a
  // kubelet client request, so the approver leaves it pending.
  it('approves only the two usage sets ValidateKubeletClientCSR allows', async () => {
    const { api, post } = await csrServer();
    api.store.create(SECRETS, 'kube-system', nodeToken('nodecc', 'system:bootstrappers:kubeadm:default-node-token'));
    const token = `nodecc.${'x'.repeat(16)}`;
    const wrong = [['client auth'], ['key encipherment', 'client auth']];
    for (const usages of wrong)
      expect(await post(token, (await createKubeletCsr('worker-4', [])).csrDer, { usages })).toBe(201);
    const right = [
      ['client auth', 'digital signature', 'client auth'],
      ['digital signature', 'key encipherment', 'client auth'],
    ];
    for (const usages of right)
      expect(await post(token, (await createKubeletCsr('worker-5', [])).csrDer, { usages })).toBe(201);
    const signed = (c: KubeObject): boolean =>
      (c['status'] as { certificate?: string } | undefined)?.certificate !== undefined;
    const items = await eventually(
      () => api.store.list(CSRS, undefined).items,
      (list) => list.filter(signed).length === right.length,
    );
    expect(
      items
        .map((c) => [(c['spec'] as { usages: string[] }).usages.join(','), signed(c)] as const)
        .sort(([a], [b]) => a.localeCompare(b)),
    ).toEqual([
      ['client auth', false],
      ['client auth,digital signature,client auth', true],
      ['digital signature,key encipherment,client auth', true],
      ['key encipherment,client auth', false],
    ]);
  });

  // signer.go sign/duration: a request's expirationSeconds shortens the certificate (at least
  // 10 minutes, at most the signing duration); approval messages name the recognizer that matched.
  it('honours expirationSeconds when signing', async () => {
    const { api, post } = await csrServer();
    api.store.create(SECRETS, 'kube-system', nodeToken('nodedd', 'system:bootstrappers:kubeadm:default-node-token'));
    const before = Date.now();
    expect(
      await post(`nodedd.${'x'.repeat(16)}`, (await createKubeletCsr('worker-6', [])).csrDer, {
        expirationSeconds: 3600,
      }),
    ).toBe(201);
    const [csr] = await eventually(
      () => api.store.list(CSRS, undefined).items,
      (list) => list.some((c) => (c['status'] as { certificate?: string } | undefined)?.certificate !== undefined),
    );
    const status = csr?.['status'] as { certificate: string; conditions: { message: string }[] };
    expect(status.conditions[0]?.message).toBe('Auto approving kubelet client certificate after SubjectAccessReview.');
    const cert = new X509Certificate(Buffer.from(status.certificate, 'base64').toString());
    const validTo = new Date(cert.validTo).getTime();
    expect(validTo).toBeGreaterThanOrEqual(before + 3600_000 - 1_000);
    expect(validTo).toBeLessThanOrEqual(Date.now() + 3600_000);
  });

  // ParseCSR (pkg/apis/certificates/helpers.go) reads the request with Go's pem.Decode, which
  // drops line breaks inside the base64 body: a PEM with 64-column lines and an empty line before
  // the END line (what a body whose length is a multiple of 64 gets from naive wrapping) is as
  // good as one long line.
  it('reads the request PEM as pem.Decode does, line breaks and empty lines included', async () => {
    const { api, post } = await csrServer();
    api.store.create(SECRETS, 'kube-system', nodeToken('nodeee', 'system:bootstrappers:kubeadm:default-node-token'));
    const { csrDer } = await createKubeletCsr('worker-7', []);
    const body = `${csrDer.toString('base64').replace(/(.{64})/g, '$1\n')}\n`;
    const pem = `-----BEGIN CERTIFICATE REQUEST-----\n${body}\n-----END CERTIFICATE REQUEST-----\n`;
    expect(await post(`nodeee.${'x'.repeat(16)}`, csrDer, {}, pem)).toBe(201);
    const [csr] = await eventually(
      () => api.store.list(CSRS, undefined).items,
      (list) => list.some((c) => (c['status'] as { certificate?: string } | undefined)?.certificate !== undefined),
    );
    expect((csr?.['status'] as { certificate?: string } | undefined)?.certificate).toBeDefined();
  });
});
