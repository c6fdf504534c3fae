import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import { freePort, installTypeScriptCommand, repoRoot, tempDirForTest } from '@constellation/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { stopApiServer } from './api-server-process.js';
import { standinPaths } from './paths.js';

// kubeadm init with an InitConfiguration that has no bootstrapTokens: like real kubeadm
// (SetDefaults_BootstrapTokens, bootstraptoken/node/token.go UpdateOrCreateTokens) the stand-in
// creates a 24 h token that signs cluster-info and authenticates in kubeadm's node group, and
// prints it in the join command unless --skip-token-print.

const roots: string[] = [];
afterEach(async () => {
  await Promise.all(roots.splice(0).map((root) => stopApiServer(root)));
});

describe('kubeadm stand-in init without bootstrapTokens', () => {
  it("creates kubeadm's default 24 h node token, signs cluster-info with it, and prints it", async () => {
    const root = await tempDirForTest();
    roots.push(root);
    const kubeadm = await installTypeScriptCommand(
      join(root, 'bin'),
      'kubeadm',
      join(repoRoot(), 'libs/sandbox/src/kubeadm-standin/main.ts'),
    );
    const port = await freePort();
    const config = join(root, 'init.yaml');
    await writeFile(
      config,
      [
        {
          apiVersion: 'kubeadm.k8s.io/v1beta4',
          kind: 'InitConfiguration',
          nodeRegistration: { name: 'cp-0' },
          localAPIEndpoint: { advertiseAddress: '127.0.0.1', bindPort: port },
        },
        { apiVersion: 'kubeadm.k8s.io/v1beta4', kind: 'ClusterConfiguration', kubernetesVersion: 'v1.32.9' },
      ]
        .map((d) => stringify(d))
        .join('---\n'),
    );
    const before = Date.now();
    const { stdout } = await promisify(execFile)(kubeadm, ['init', '--config', config], {
      env: { ...process.env, KUBEADM_STANDIN_ROOT: root },
      timeout: 60_000,
    });
    const after = Date.now();
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(standinPaths(root).adminConf);
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const tokens = (await core.listNamespacedSecret({ namespace: 'kube-system' })).items.filter(
      (s) => s.type === 'bootstrap.kubernetes.io/token',
    );
    expect(tokens).toHaveLength(1);
    const data = Object.fromEntries(
      Object.entries(tokens[0]?.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]),
    );
    expect(data).toMatchObject({
      'usage-bootstrap-signing': 'true',
      'usage-bootstrap-authentication': 'true',
      'auth-extra-groups': 'system:bootstrappers:kubeadm:default-node-token',
    });
    // The token is made while the command runs, so its expiry lies 24 h after a moment between
    // `before` and `after` (RFC 3339 whole seconds: up to 1 s earlier).
    const expiration = new Date(data['expiration'] ?? '').getTime();
    expect(expiration).toBeGreaterThanOrEqual(before + 24 * 3600_000 - 1_000);
    expect(expiration).toBeLessThanOrEqual(after + 24 * 3600_000);
    expect(stdout).toContain(`--token ${data['token-id'] ?? ''}.${data['token-secret'] ?? ''}`);
    // kube-controller-manager's bootstrap signer signed cluster-info for it.
    const deadline = Date.now() + 5_000;
    let signed = false;
    while (!signed && Date.now() < deadline) {
      const info = await core.readNamespacedConfigMap({ namespace: 'kube-public', name: 'cluster-info' });
      signed = info.data?.[`jws-kubeconfig-${data['token-id'] ?? ''}`] !== undefined;
      if (!signed) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(signed).toBe(true);
  });
});
