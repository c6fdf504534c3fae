import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runProgram } from '@constellation/control-plane';
import { kubernetesBinDir } from '@constellation/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { standinPaths } from './paths.js';
import { initYaml, standinCluster } from './standin.fixture.js';
import type { StandinCluster } from './standin.fixture.js';

// The stand-in's init runs the real control plane: kubeadm's own phases on the node's file, the
// four programs from kubeadm's manifests, the kubelet's registration with kubeadm's kubelet.conf,
// then kubeadm's upload-config, mark-control-plane and bootstrap-token; reset stops the programs.

const TOKEN = 'abcdef.0123456789abcdef';
let cluster: StandinCluster | undefined;
afterEach(async () => {
  await cluster?.cleanup();
  cluster = undefined;
});

/** The built kubectl with the node's admin.conf. */
async function kubectl(root: string, args: string[]): Promise<string> {
  const { stdout } = await runProgram(
    join(kubernetesBinDir(), 'kubectl'),
    ['--kubeconfig', standinPaths(root).adminConf, ...args],
    { timeoutMs: 30_000 },
  );
  return stdout;
}

describe('kubeadm stand-in init', () => {
  it('starts the real control plane, registers the Node as its kubelet and runs kubeadm’s upload, mark and token phases', async () => {
    cluster = await standinCluster();
    const node = await cluster.node();
    const config = join(node.root, 'init.yaml');
    await writeFile(config, initYaml(cluster, { bootstrapTokens: [{ token: TOKEN }] }));
    const result = await node.run(['init', '--config', config]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('Your Kubernetes control-plane has initialized successfully!');
    expect(result.stdout).toContain(`--token ${TOKEN}`);

    const version = JSON.parse(await kubectl(node.root, ['version', '-o', 'json'])) as {
      serverVersion: { gitVersion: string };
    };
    expect(version.serverVersion.gitVersion).toBe(cluster.release);
    const registered = JSON.parse(await kubectl(node.root, ['get', 'node', 'cp-0', '-o', 'json'])) as {
      metadata: { labels: Record<string, string> };
      spec: { taints?: { key: string; effect: string }[] };
      status: { conditions: { type: string; status: string }[] };
    };
    expect(registered.metadata.labels).toHaveProperty('node-role.kubernetes.io/control-plane', '');
    expect(registered.spec.taints).toContainEqual({
      key: 'node-role.kubernetes.io/control-plane',
      effect: 'NoSchedule',
    });
    expect(registered.status.conditions).toContainEqual(expect.objectContaining({ type: 'Ready', status: 'True' }));
    // kubeadm's upload-config stored the cluster's and the kubelet's configuration.
    expect(
      await kubectl(node.root, [
        '-n',
        'kube-system',
        'get',
        'configmap',
        'kubeadm-config',
        'kubelet-config',
        '-o',
        'name',
      ]),
    ).toBe('configmap/kubeadm-config\nconfigmap/kubelet-config\n');
    // kubeadm's bootstrap-token phase made the token; kube-controller-manager's bootstrap signer signs cluster-info for it.
    const deadline = Date.now() + 30_000;
    let signed = '';
    while (signed === '' && Date.now() < deadline) {
      signed = await kubectl(node.root, [
        '-n',
        'kube-public',
        'get',
        'configmap',
        'cluster-info',
        '-o',
        'jsonpath={.data.jws-kubeconfig-abcdef}',
      ]);
      if (signed === '') await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(signed).toMatch(/^[\w-]+\.\.[\w-]+$/);

    // reset stops the programs and cleans the node.
    const state = JSON.parse(await readFile(join(standinPaths(node.root).run, 'control-plane.json'), 'utf8')) as {
      processes: { program: string; pid: number }[];
    };
    expect(state.processes.map((p) => p.program)).toEqual([
      'etcd',
      'kube-apiserver',
      'kube-controller-manager',
      'kube-scheduler',
    ]);
    expect((await node.run(['reset', '--force'])).code).toBe(0);
    const alive = state.processes.filter((p) => {
      try {
        process.kill(p.pid, 0);
        return true;
      } catch {
        return false;
      }
    });
    expect(alive).toEqual([]);
  }, 180_000);
});
