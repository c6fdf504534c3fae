import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { caPublicKeyPin } from '@constellation/keys';
import { sharedKubernetes, tempDirForTest, waitFor } from '@constellation/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { createBootstrapToken } from './bootstrap-token.js';
import type { BootstrapToken } from './bootstrap-token.js';
import { sharedAdminCore } from './claim-records.fixture.js';
import { INIT_TOKEN_GROUP } from './init-bootstrap-token.js';
import { initConfiguration, joinConfiguration } from './kubeadm-config.js';
import { KubeadmError, runKubeadm } from './kubeadm-runner.js';
import { KUBELET_SERVING_CERT_FILE } from './kubelet-paths.js';

// The join configuration we generate, through the real kubeadm's token discovery
// (cmd/kubeadm/app/discovery/token) against the run's real API server and bootstrap signer:
// `kubeadm join phase kubelet-start` discovers and validates the cluster, then writes the
// kubelet's bootstrap kubeconfig and configuration, all in a root of the test's own (--rootfs; no
// init system there, so it starts no kubelet).

const core = sharedAdminCore();
let minted: BootstrapToken;

beforeAll(async () => {
  minted = await createBootstrapToken(core, 15 * 60_000, 'kubeadm join discovery test');
  // kube-controller-manager's bootstrap signer signs cluster-info for it.
  await waitFor(
    async () =>
      (await core.readNamespacedConfigMap({ namespace: 'kube-public', name: 'cluster-info' })).data?.[
        `jws-kubeconfig-${minted.id}`
      ] !== undefined,
    { timeoutMs: 30_000, intervalMs: 250, description: "the bootstrap signer's signature for the minted token" },
  );
});

afterAll(async () => {
  await core.deleteNamespacedSecret({ namespace: 'kube-system', name: `bootstrap-token-${minted.id}` });
});

/** Runs the kubelet-start phase of a join with `token` and `pins`: its root, or kubeadm's error output. */
async function kubeletStart(
  token: string,
  pins: string[],
  discovery = '3s',
): Promise<{ root: string; output: string }> {
  const k = sharedKubernetes();
  const root = await tempDirForTest();
  await mkdir(join(root, 'etc', 'kubernetes'), { recursive: true });
  const [document] = parseAllDocuments(
    joinConfiguration({
      nodeName: 'discovery-worker',
      nodeIp: '10.42.0.99',
      apiServerEndpoint: new URL(k.apiServerUrl).host,
      token,
      caCertHashes: pins,
    }),
  ).map((d) => d.toJS() as Record<string, unknown>);
  // kubeadm's discovery timeout, shortened for the refusals.
  await writeFile(join(root, 'join.yaml'), stringify({ ...document, timeouts: { discovery } }), { mode: 0o600 });
  const output = await runKubeadm(['join', 'phase', 'kubelet-start', '--config', '/join.yaml', '--rootfs', root], {
    program: join(k.binDir, 'kubeadm'),
    timeoutMs: 60_000,
  }).catch((err: unknown) => {
    if (err instanceof KubeadmError) return `FAILED: ${err.output}`;
    throw err;
  });
  return { root, output };
}

describe('kubeadm token discovery with our join configuration', () => {
  it('trusts the API server for a minted token and the pinned CA, in any case, and configures the kubelet from the cluster', async () => {
    const k = sharedKubernetes();
    const pin = caPublicKeyPin(k.caCertificatePem);
    // pubkeypin.Set.Allow lower-cases the hex: an upper-case pin is the same pin.
    const upper = `sha256:${pin.slice('sha256:'.length).toUpperCase()}`;
    for (const pins of [[pin], [upper]]) {
      const { root, output } = await kubeletStart(minted.token, pins);
      expect(output).not.toMatch(/^FAILED/);
      const bootstrap = parse(await readFile(join(root, 'etc', 'kubernetes', 'bootstrap-kubelet.conf'), 'utf8')) as {
        clusters: { cluster: { server: string; 'certificate-authority-data': string } }[];
        users: { user: { token: string } }[];
      };
      expect(bootstrap.clusters[0]?.cluster.server).toBe(k.apiServerUrl);
      expect(Buffer.from(bootstrap.clusters[0]?.cluster['certificate-authority-data'] ?? '', 'base64').toString()).toBe(
        k.caCertificatePem,
      );
      expect(bootstrap.users[0]?.user.token).toBe(minted.token);
      // The cluster's kubelet-config, which init stored from our init file's KubeletConfiguration.
      const kubelet = parse(await readFile(join(root, 'var', 'lib', 'kubelet', 'config.yaml'), 'utf8')) as Record<
        string,
        unknown
      >;
      expect(kubelet['tlsCertFile']).toBe(KUBELET_SERVING_CERT_FILE);
      expect(await readFile(join(root, 'var', 'lib', 'kubelet', 'kubeadm-flags.env'), 'utf8')).toContain(
        '--node-ip=10.42.0.99',
      );
    }
  });

  it('refuses cluster-info signed with another secret, and a CA that is not pinned', async () => {
    const pin = caPublicKeyPin(sharedKubernetes().caCertificatePem);
    // token.go validateClusterInfoToken: the JWS for the id does not verify with the joiner's secret.
    expect((await kubeletStart(`${minted.id}.${'x'.repeat(16)}`, [pin])).output).toContain(
      "error: error execution phase kubelet-start: couldn't validate the identity of the API Server: failed to verify JWS signature of received cluster info object, can't trust this API Server",
    );
    // token.go validateClusterCA: pubkeypin.Set.CheckAny.
    expect((await kubeletStart(minted.token, [`sha256:${'00'.repeat(32)}`])).output).toContain(
      `error: error execution phase kubelet-start: couldn't validate the identity of the API Server: cluster CA found in cluster-info ConfigMap is invalid: none of the public keys "${pin}" are pinned`,
    );
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
    const { output } = await kubeletStart(`${id}.${decoded(init?.data, 'token-secret')}`, [
      caPublicKeyPin(sharedKubernetes().caCertificatePem),
    ]);
    expect(output).toContain(
      `couldn't validate the identity of the API Server: could not find a JWS signature in the cluster-info ConfigMap for token ID "${id}"`,
    );
  });
});
