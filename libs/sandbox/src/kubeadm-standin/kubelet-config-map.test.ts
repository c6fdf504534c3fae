import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { caPublicKeyPin } from '@constellation/keys';
import { afterEach, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { standinPaths } from './paths.js';
import { KUBEADM_API as API, standinCluster } from './standin.fixture.js';
import type { StandinCluster } from './standin.fixture.js';
// Where a node's kubelet configuration comes from. init: its file's KubeletConfiguration, written
// to /var/lib/kubelet/config.yaml and stored in ConfigMap kube-system/kubelet-config
// (cmd/kubeadm/app/phases/kubelet/config.go CreateConfigMap). join: that ConfigMap, downloaded in
// preflight (cmd/kubeadm/app/util/config/cluster.go getInitConfigurationFromCluster ->
// componentconfigs.FetchFromCluster, kubeletConfigFromCluster with mustExist); a KubeletConfiguration
// in the join file is skipped (joinconfiguration.go documentMapToJoinConfiguration).

const KUBELET_API = 'kubelet.config.k8s.io/v1beta1';
const TOKEN = 'abcdef.0123456789abcdef';
let cluster: StandinCluster | undefined;
afterEach(async () => {
  await cluster?.cleanup();
  cluster = undefined;
});

const yaml = (docs: Record<string, unknown>[]): string => docs.map((d) => stringify(d)).join('---\n');

/** init (real kubeadm and control plane, in a network namespace of the test's own) of a new cluster. */
async function initCluster(
  skipKubeletUpload = false,
): Promise<{ cluster: StandinCluster; caPem: string; root: string }> {
  const started = await standinCluster();
  cluster = started;
  const cp = await started.node();
  const config = join(cp.root, 'init.yaml');
  await writeFile(
    config,
    yaml([
      {
        apiVersion: API,
        kind: 'InitConfiguration',
        nodeRegistration: { name: 'cp-0' },
        bootstrapTokens: [{ token: TOKEN }],
        localAPIEndpoint: { advertiseAddress: started.network.ip, bindPort: 6443 },
        ...(skipKubeletUpload ? { skipPhases: ['upload-config/kubelet'] } : {}),
      },
      { apiVersion: API, kind: 'ClusterConfiguration', kubernetesVersion: started.release },
      { apiVersion: KUBELET_API, kind: 'KubeletConfiguration', tlsCertFile: '/cluster/serving.crt' },
    ]),
  );
  const { code, stdout, stderr } = await cp.run(['init', '--config', config]);
  expect(code, stderr).toBe(0);
  expect(stdout).toContain('Your Kubernetes control-plane has initialized successfully!');
  const caPem = await readFile(join(standinPaths(cp.root).pki, 'ca.crt'), 'utf8');
  return { cluster: started, caPem, root: cp.root };
}

function joinFile(on: StandinCluster, caPem: string): string {
  return yaml([
    {
      apiVersion: API,
      kind: 'JoinConfiguration',
      nodeRegistration: { name: 'worker-1' },
      discovery: {
        bootstrapToken: {
          apiServerEndpoint: `${on.network.ip}:6443`,
          token: TOKEN,
          caCertHashes: [caPublicKeyPin(caPem)],
        },
      },
    },
    { apiVersion: KUBELET_API, kind: 'KubeletConfiguration', tlsCertFile: '/join-file/serving.crt' },
  ]);
}

describe('the kubelet configuration of init and join', () => {
  it('init writes its KubeletConfiguration and kubeadm stores it in kubelet-config; join takes the ConfigMap’s, not its file’s', async () => {
    const { cluster: on, caPem, root } = await initCluster();
    const cpConfig = parse(await readFile(standinPaths(root).kubeletConfig, 'utf8')) as Record<string, unknown>;
    expect(cpConfig).toMatchObject({ kind: 'KubeletConfiguration', tlsCertFile: '/cluster/serving.crt' });
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(standinPaths(root).adminConf);
    const stored = await kc
      .makeApiClient(k8s.CoreV1Api)
      .readNamespacedConfigMap({ namespace: 'kube-system', name: 'kubelet-config' });
    // kubeadm stores it with its defaults filled in.
    expect(parse(stored.data?.['kubelet'] ?? '')).toMatchObject(cpConfig);

    const worker = await on.node();
    const file = join(worker.root, 'join.yaml');
    await writeFile(file, joinFile(on, caPem));
    const { code, stdout, stderr } = await worker.run(['join', '--config', file]);
    expect(code, stderr).toBe(0);
    expect(stdout).toContain('This node has joined the cluster');
    const workerConfig = parse(await readFile(standinPaths(worker.root).kubeletConfig, 'utf8')) as unknown;
    expect(workerConfig).toMatchObject({ tlsCertFile: '/cluster/serving.crt' });
  }, 120_000);

  it('join fails in preflight when init skipped the kubelet-config ConfigMap (mustExist)', async () => {
    const { cluster: on, caPem } = await initCluster(true);
    const worker = await on.node();
    const file = join(worker.root, 'join.yaml');
    await writeFile(file, joinFile(on, caPem));
    const { code, stderr } = await worker.run(['join', '--config', file]);
    expect(code).not.toBe(0);
    expect(stderr).toContain(
      // kubeadm's upload-config/kubelet also makes the Role that lets joining nodes read it: without
      // the phase the real API server refuses the token before it looks for the ConfigMap.
      'error execution phase preflight: unable to fetch the kubeadm-config ConfigMap: failed to get component configs: could not download the kubelet configuration from ConfigMap "kubelet-config": configmaps "kubelet-config" is forbidden: User "system:bootstrap:abcdef" cannot get resource "configmaps" in API group "" in the namespace "kube-system"',
    );
  }, 120_000);
});
