import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CertificateAuthority, caPublicKeyPin, createKubeletCsr } from '@constellation/keys';
import { sharedKubernetes, tempDirForTest, waitFor } from '@constellation/testing';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { createBootstrapToken } from './bootstrap-token.js';
import { sharedAdminCore } from './claim-records.fixture.js';
import { discoveryKubeconfig } from './discovery-kubeconfig.js';
import type { DiscoveryCredentials } from './discovery-kubeconfig.js';
import { INIT_TOKEN_GROUP } from './init-bootstrap-token.js';
import { initConfiguration, joinConfiguration } from './kubeadm-config.js';
import { KubeadmError, runKubeadm } from './kubeadm-runner.js';
import { KUBELET_SERVING_CERT_FILE } from './kubelet-paths.js';

// The join configuration we generate, through the real kubeadm's file discovery
// (cmd/kubeadm/app/discovery/file) against the run's real API server, with what a join ticket
// carries (the cluster CA and the kubelet's client certificate): `kubeadm join phase kubelet-start`
// trusts the API server by that CA, reads the cluster's kubeadm and kubelet configuration as the
// node, then writes the kubelet's bootstrap kubeconfig and configuration, all in a root of the
// test's own (--rootfs; no init system there, so it starts no kubelet). No bootstrap token exists.

const core = sharedAdminCore();
/** A join ticket's credentials for node "discovery-worker", issued by the run's cluster CA. */
let ticket: DiscoveryCredentials;
/** The same, issued by a CA the cluster does not know. */
let foreign: DiscoveryCredentials;

async function credentials(ca: CertificateAuthority, caCertificatePem: string): Promise<DiscoveryCredentials> {
  const { csrDer, keyPem } = await createKubeletCsr('discovery-worker', []);
  const issued = await ca.issueKubeletClientCertificate(csrDer);
  return {
    apiServerEndpoint: new URL(sharedKubernetes().apiServerUrl).host,
    caCertificatePem,
    clientCertificatePem: issued.certificatePem,
    clientKeyPem: keyPem,
  };
}

beforeAll(async () => {
  const pki = join(sharedKubernetes().root, 'etc', 'kubernetes', 'pki');
  const caPem = await readFile(join(pki, 'ca.crt'), 'utf8');
  ticket = await credentials(
    await CertificateAuthority.fromPem(caPem, await readFile(join(pki, 'ca.key'), 'utf8')),
    caPem,
  );
  const stranger = await CertificateAuthority.generate('not-the-cluster');
  foreign = await credentials(stranger.ca, stranger.certificatePem);
});

/** Runs the kubelet-start phase of `document` (a JoinConfiguration) in a root of its own: the root, or kubeadm's error output. */
async function kubeletStartWith(
  document: Record<string, unknown>,
  discoveryFile?: string,
): Promise<{ root: string; output: string }> {
  const k = sharedKubernetes();
  const root = await tempDirForTest();
  await mkdir(join(root, 'etc', 'kubernetes'), { recursive: true });
  if (discoveryFile !== undefined)
    await writeFile(join(root, 'etc', 'kubernetes', 'discovery.conf'), discoveryFile, { mode: 0o600 });
  await writeFile(join(root, 'join.yaml'), stringify(document), { mode: 0o600 });
  const output = await runKubeadm(['join', 'phase', 'kubelet-start', '--config', '/join.yaml', '--rootfs', root], {
    program: join(k.binDir, 'kubeadm'),
    timeoutMs: 60_000,
  }).catch((err: unknown) => {
    if (err instanceof KubeadmError) return `FAILED: ${err.output}`;
    throw err;
  });
  return { root, output };
}

/** Our JoinConfiguration with a discovery file of `credentials`, kubeadm's discovery bound shortened for refusals. */
function kubeletStart(credentials: DiscoveryCredentials, discovery = '3s'): Promise<{ root: string; output: string }> {
  const document = parse(
    joinConfiguration({
      nodeName: 'discovery-worker',
      nodeIp: '10.42.0.99',
      discoveryFile: '/etc/kubernetes/discovery.conf',
    }),
  ) as Record<string, unknown>;
  return kubeletStartWith({ ...document, timeouts: { discovery } }, discoveryKubeconfig(credentials));
}

describe('kubeadm file discovery with our join configuration and a join ticket’s credentials', () => {
  it('trusts the API server by the ticket’s CA and configures the kubelet with its own certificate, from the cluster', async () => {
    const k = sharedKubernetes();
    const { root, output } = await kubeletStart(ticket);
    expect(output).not.toMatch(/^FAILED/);
    const bootstrap = parse(await readFile(join(root, 'etc', 'kubernetes', 'bootstrap-kubelet.conf'), 'utf8')) as {
      clusters: { cluster: { server: string; 'certificate-authority-data': string } }[];
      users: { user: { token?: string; 'client-certificate-data'?: string } }[];
    };
    expect(bootstrap.clusters[0]?.cluster.server).toBe(k.apiServerUrl);
    expect(Buffer.from(bootstrap.clusters[0]?.cluster['certificate-authority-data'] ?? '', 'base64').toString()).toBe(
      k.caCertificatePem,
    );
    // The kubelet's own credential, not a token: it finds it in its store and posts no CSR.
    expect(bootstrap.users[0]?.user.token).toBeUndefined();
    expect(Buffer.from(bootstrap.users[0]?.user['client-certificate-data'] ?? '', 'base64').toString()).toBe(
      ticket.clientCertificatePem,
    );
    // The cluster's kubelet-config, which init stored from our init file's KubeletConfiguration.
    const kubelet = parse(await readFile(join(root, 'var', 'lib', 'kubelet', 'config.yaml'), 'utf8')) as Record<
      string,
      unknown
    >;
    expect(kubelet['tlsCertFile']).toBe(KUBELET_SERVING_CERT_FILE);
    expect(await readFile(join(root, 'var', 'lib', 'kubelet', 'kubeadm-flags.env'), 'utf8')).toContain(
      '--node-ip=10.42.0.99',
    );
  });

  it('refuses an API server the ticket’s CA did not sign, and a client certificate the cluster’s CA did not issue', async () => {
    // A man in the middle whose ticket CA is not the cluster's: the TLS handshake fails.
    const wrongCa = await kubeletStart({ ...ticket, caCertificatePem: foreign.caCertificatePem });
    expect(wrongCa.output).toMatch(/^FAILED/);
    expect(wrongCa.output).toContain('x509: certificate signed by unknown authority');
    // A credential from elsewhere: the API server does not know who it is.
    const wrongClient = await kubeletStart({ ...foreign, caCertificatePem: ticket.caCertificatePem });
    expect(wrongClient.output).toMatch(/^FAILED/);
    expect(wrongClient.output).toContain('Unauthorized');
  });

  it('refuses the token kubeadm init made from our configuration: the bootstrap signer never signs for it', async () => {
    // kubeadm init's bootstrap-token phase with our InitConfiguration, as the run's control plane
    // ran it at its start: its token lives 10 minutes (INIT_TOKEN_TTL), and a run is longer.
    const k = sharedKubernetes();
    const dir = await tempDirForTest();
    await writeFile(
      join(dir, 'init.yaml'),
      initConfiguration({
        nodeName: 'discovery-init',
        nodeIp: k.ip,
        bindPort: 6443,
        clusterName: 'constellation',
        kubernetesVersion: k.release,
        controlPlaneEndpoint: new URL(k.apiServerUrl).host,
        certSans: [],
        kubeProxy: false,
      }),
      { mode: 0o600 },
    );
    await runKubeadm(
      ['init', 'phase', 'bootstrap-token', '--config', join(dir, 'init.yaml'), '--kubeconfig', k.superAdminKubeconfig],
      { program: join(k.binDir, 'kubeadm'), timeoutMs: 60_000 },
    );
    // A signing token made after it: once the bootstrap signer has signed that one, it has seen
    // kubeadm's too, and the missing signature below is its decision, not its delay.
    const control = await createBootstrapToken(core, 5 * 60_000, 'kubeadm join discovery test, signer control');
    try {
      await waitFor(
        async () =>
          (await core.readNamespacedConfigMap({ namespace: 'kube-public', name: 'cluster-info' })).data?.[
            `jws-kubeconfig-${control.id}`
          ] !== undefined,
        { timeoutMs: 30_000, intervalMs: 250, description: "the bootstrap signer's signature for the control token" },
      );
    } finally {
      await core.deleteNamespacedSecret({ namespace: 'kube-system', name: `bootstrap-token-${control.id}` });
    }
    const secrets = (await core.listNamespacedSecret({ namespace: 'kube-system' })).items;
    const decoded = (data: Record<string, string> | undefined, key: string): string =>
      Buffer.from(data?.[key] ?? '', 'base64').toString();
    const init = secrets.find(
      (s) => s.type === 'bootstrap.kubernetes.io/token' && decoded(s.data, 'auth-extra-groups') === INIT_TOKEN_GROUP,
    );
    expect(init, "kubeadm init's token in the shared control plane's kube-system").toBeDefined();
    const id = decoded(init?.data, 'token-id');
    // kubeadm's token discovery, which nodes no longer use: the token would be worth nothing there either.
    const { output } = await kubeletStartWith({
      apiVersion: 'kubeadm.k8s.io/v1beta4',
      kind: 'JoinConfiguration',
      nodeRegistration: { name: 'discovery-worker', criSocket: 'unix:///run/containerd/containerd.sock' },
      discovery: {
        bootstrapToken: {
          apiServerEndpoint: new URL(sharedKubernetes().apiServerUrl).host,
          token: `${id}.${decoded(init?.data, 'token-secret')}`,
          caCertHashes: [caPublicKeyPin(sharedKubernetes().caCertificatePem)],
        },
      },
      timeouts: { discovery: '3s' },
    });
    expect(output).toContain(
      `couldn't validate the identity of the API Server: could not find a JWS signature in the cluster-info ConfigMap for token ID "${id}"`,
    );
  });
});
