import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import { caPublicKeyPin } from '@constellation/keys';
import { freePort, installTypeScriptCommand, repoRoot, tempDirForTest } from '@constellation/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { stopApiServer } from './api-server-process.js';
import { standinPaths } from './paths.js';

// Where a node's kubelet configuration comes from. init: its file's KubeletConfiguration, written
// to /var/lib/kubelet/config.yaml and stored in ConfigMap kube-system/kubelet-config
// (cmd/kubeadm/app/phases/kubelet/config.go CreateConfigMap). join: that ConfigMap, downloaded in
// preflight (cmd/kubeadm/app/util/config/cluster.go getInitConfigurationFromCluster ->
// componentconfigs.FetchFromCluster, kubeletConfigFromCluster with mustExist); a KubeletConfiguration
// in the join file is skipped (joinconfiguration.go documentMapToJoinConfiguration).

const API = 'kubeadm.k8s.io/v1beta4';
const KUBELET_API = 'kubelet.config.k8s.io/v1beta1';
const TOKEN = 'abcdef.0123456789abcdef';
const roots: string[] = [];
afterEach(async () => {
  await Promise.all(roots.splice(0).map((root) => stopApiServer(root)));
});

const yaml = (docs: Record<string, unknown>[]): string => docs.map((d) => stringify(d)).join('---\n');

async function standin(): Promise<{ root: string; run: (args: string[]) => Promise<{ code: number; out: string }> }> {
  const root = await tempDirForTest();
  roots.push(root);
  const program = await installTypeScriptCommand(
    join(root, 'bin'),
    'kubeadm',
    join(repoRoot(), 'libs/sandbox/src/kubeadm-standin/main.ts'),
  );
  const run = async (args: string[]): Promise<{ code: number; out: string }> => {
    try {
      const { stdout, stderr } = await promisify(execFile)(program, args, {
        env: { ...process.env, KUBEADM_STANDIN_ROOT: root },
        timeout: 60_000,
      });
      return { code: 0, out: stdout + stderr };
    } catch (err) {
      const e = err as { code?: number; stdout?: string; stderr?: string };
      return { code: e.code ?? -1, out: (e.stdout ?? '') + (e.stderr ?? '') };
    }
  };
  return { root, run };
}

async function initCluster(skipKubeletUpload = false): Promise<{ port: number; caPem: string; root: string }> {
  const cp = await standin();
  const port = await freePort();
  const config = join(cp.root, 'init.yaml');
  await writeFile(
    config,
    yaml([
      {
        apiVersion: API,
        kind: 'InitConfiguration',
        nodeRegistration: { name: 'cp-0' },
        bootstrapTokens: [{ token: TOKEN }],
        localAPIEndpoint: { advertiseAddress: '127.0.0.1', bindPort: port },
        ...(skipKubeletUpload ? { skipPhases: ['upload-config/kubelet'] } : {}),
      },
      { apiVersion: API, kind: 'ClusterConfiguration', kubernetesVersion: 'v1.32.9' },
      { apiVersion: KUBELET_API, kind: 'KubeletConfiguration', tlsCertFile: '/cluster/serving.crt' },
    ]),
  );
  const { code, out } = await cp.run(['init', '--config', config]);
  expect(out).toContain('Your Kubernetes control-plane has initialized successfully!');
  expect(code).toBe(0);
  const caPem = await readFile(join(standinPaths(cp.root).pki, 'ca.crt'), 'utf8');
  return { port, caPem, root: cp.root };
}

function joinFile(port: number, caPem: string): string {
  return yaml([
    {
      apiVersion: API,
      kind: 'JoinConfiguration',
      nodeRegistration: { name: 'worker-1' },
      discovery: {
        bootstrapToken: { apiServerEndpoint: `127.0.0.1:${port}`, token: TOKEN, caCertHashes: [caPublicKeyPin(caPem)] },
      },
    },
    { apiVersion: KUBELET_API, kind: 'KubeletConfiguration', tlsCertFile: '/join-file/serving.crt' },
  ]);
}

describe('the kubelet configuration of init and join', () => {
  it('init writes its KubeletConfiguration and stores it in kubelet-config; join takes the ConfigMap’s, not its file’s', async () => {
    const { port, caPem, root } = await initCluster();
    const cpConfig = parse(await readFile(standinPaths(root).kubeletConfig, 'utf8')) as Record<string, unknown>;
    expect(cpConfig).toMatchObject({ kind: 'KubeletConfiguration', tlsCertFile: '/cluster/serving.crt' });
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(standinPaths(root).adminConf);
    const stored = await kc
      .makeApiClient(k8s.CoreV1Api)
      .readNamespacedConfigMap({ namespace: 'kube-system', name: 'kubelet-config' });
    expect(parse(stored.data?.['kubelet'] ?? '')).toEqual(cpConfig);

    const worker = await standin();
    const file = join(worker.root, 'join.yaml');
    await writeFile(file, joinFile(port, caPem));
    const { code, out } = await worker.run(['join', '--config', file]);
    expect(out).toContain('This node has joined the cluster');
    expect(code).toBe(0);
    const workerConfig = parse(await readFile(standinPaths(worker.root).kubeletConfig, 'utf8')) as unknown;
    expect(workerConfig).toMatchObject({ tlsCertFile: '/cluster/serving.crt' });
  });

  it('join fails in preflight when the cluster has no kubelet-config ConfigMap (mustExist)', async () => {
    const { port, caPem } = await initCluster(true);
    const worker = await standin();
    const file = join(worker.root, 'join.yaml');
    await writeFile(file, joinFile(port, caPem));
    const { code, out } = await worker.run(['join', '--config', file]);
    expect(code).not.toBe(0);
    expect(out).toContain(
      'error execution phase preflight: unable to fetch the kubeadm-config ConfigMap: failed to get component configs: could not download the kubelet configuration from ConfigMap "kubelet-config": configmaps "kubelet-config" not found',
    );
  });
});
