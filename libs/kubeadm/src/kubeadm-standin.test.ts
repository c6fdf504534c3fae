import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { caPublicKeyPin } from '@constellation/keys';
import { standinPaths, stopApiServer } from '@constellation/sandbox';
import { freePort, installTypeScriptCommand, repoRoot, tempDirForTest } from '@constellation/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { createBootstrapToken } from './bootstrap-token.js';
import { initConfiguration, joinConfiguration } from './kubeadm-config.js';
import { KubeadmError, runKubeadm } from './kubeadm-runner.js';

const roots: string[] = [];
afterEach(async () => {
  await Promise.all(roots.splice(0).map((root) => stopApiServer(root)));
});

async function node(): Promise<{ root: string; kubeadm: string; env: NodeJS.ProcessEnv }> {
  const root = await tempDirForTest();
  roots.push(root);
  const kubeadm = await installTypeScriptCommand(
    join(root, 'bin'),
    'kubeadm',
    join(repoRoot(), 'libs/sandbox/src/kubeadm-standin/main.ts'),
  );
  return { root, kubeadm, env: { ...process.env, KUBEADM_STANDIN_ROOT: root } };
}

describe('generated kubeadm configuration against the strict kubeadm stand-in', () => {
  it('initialises a control plane and joins a worker with a real bootstrap token and CA pin', async () => {
    const cp = await node();
    const port = await freePort();
    const configFile = join(cp.root, 'kubeadm-init.yaml');
    await writeFile(
      configFile,
      initConfiguration({
        nodeName: 'control-plane-0',
        nodeIp: '127.0.0.1',
        bindPort: port,
        clusterName: 'mini',
        kubernetesVersion: 'v1.32.9',
        controlPlaneEndpoint: `127.0.0.1:${port}`,
        certSans: [],
        kubeProxy: false,
      }),
    );
    const lines: string[] = [];
    await runKubeadm(['init', '--config', configFile], {
      program: cp.kubeadm,
      timeoutMs: 60_000,
      env: cp.env,
      onOutput: (l) => lines.push(l),
    });
    expect(lines).toContain('Your Kubernetes control-plane has initialized successfully!');
    const paths = standinPaths(cp.root);
    const caPem = await readFile(join(paths.pki, 'ca.crt'), 'utf8');

    // The admin kubeconfig works with the real client library against the API server stand-in.
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(paths.adminConf);
    const core = kc.makeApiClient(k8s.CoreV1Api);
    expect((await core.listNode()).items.map((n) => n.metadata?.name)).toEqual(['control-plane-0']);

    const token = await createBootstrapToken(core, 15 * 60_000, 'test join');
    const worker = await node();
    const joinFile = join(worker.root, 'kubeadm-join.yaml');
    const joinYaml = (hashes: string[], secret = token.token) =>
      joinConfiguration({
        nodeName: 'worker-1',
        nodeIp: '127.0.0.2',
        apiServerEndpoint: `127.0.0.1:${port}`,
        token: secret,
        caCertHashes: hashes,
      });

    // Wrong pin: kubeadm refuses the API server's identity.
    await writeFile(joinFile, joinYaml([`sha256:${'00'.repeat(32)}`]));
    const wrongPin = await runKubeadm(['join', '--config', joinFile], {
      program: worker.kubeadm,
      timeoutMs: 60_000,
      env: worker.env,
    }).catch((e: unknown) => e);
    expect(wrongPin).toBeInstanceOf(KubeadmError);
    expect((wrongPin as KubeadmError).output).toContain('none of the public keys');
    // Wrong token secret: refused.
    await writeFile(joinFile, joinYaml([caPublicKeyPin(caPem)], `${token.id}.${'x'.repeat(16)}`));
    const wrongToken = await runKubeadm(['join', '--config', joinFile], {
      program: worker.kubeadm,
      timeoutMs: 60_000,
      env: worker.env,
    }).catch((e: unknown) => e);
    expect((wrongToken as KubeadmError).output).toContain('is not valid for this cluster');
    // Right pin and token: the worker registers.
    await writeFile(joinFile, joinYaml([caPublicKeyPin(caPem)]));
    await runKubeadm(['join', '--config', joinFile], { program: worker.kubeadm, timeoutMs: 60_000, env: worker.env });
    expect((await core.listNode()).items.map((n) => n.metadata?.name).sort()).toEqual(['control-plane-0', 'worker-1']);

    await runKubeadm(['reset', '--force'], { program: cp.kubeadm, timeoutMs: 60_000, env: cp.env });
    await expect(core.listNode()).rejects.toThrow();
  });

  it("rejects configuration with unknown fields like kubeadm's strict decoding", async () => {
    const cp = await node();
    const configFile = join(cp.root, 'bad.yaml');
    const valid = initConfiguration({
      nodeName: 'n',
      nodeIp: '127.0.0.1',
      bindPort: 6443,
      clusterName: 'c',
      kubernetesVersion: 'v1.32.9',
      controlPlaneEndpoint: '127.0.0.1:6443',
      certSans: [],
      kubeProxy: true,
    });
    await writeFile(
      configFile,
      valid.replace('clusterName: c', `clusterName: c\nsurprise: ${randomBytes(2).toString('hex')}`),
    );
    const err = await runKubeadm(['init', '--config', configFile], {
      program: cp.kubeadm,
      timeoutMs: 60_000,
      env: cp.env,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KubeadmError);
    expect((err as KubeadmError).message).toMatch(
      /ClusterConfiguration: strict decoding error: unknown field "surprise"/,
    );
  });
});
