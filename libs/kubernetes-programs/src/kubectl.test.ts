import { readFile, rm, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sharedKubernetes, startApiRelay } from '@constellation/testing';
import { Kubectl, tokenKubeconfig, writeServiceAccountKubeconfig } from './kubectl.js';
import { locateKubernetesPrograms } from './kubernetes-programs.js';

async function admin(): Promise<Kubectl> {
  const k = sharedKubernetes();
  return new Kubectl(await locateKubernetesPrograms(k.binDir), k.superAdminKubeconfig);
}

describe('Kubectl against the real API server', () => {
  it('gives a service account a token kubeconfig whose rights are exactly what RBAC grants', async () => {
    const k = sharedKubernetes();
    const kubectl = await admin();
    const ns = `kubectl-test-${Date.now().toString(36)}`;
    const dir = await mkdtemp(join(tmpdir(), 'constellation-sa-'));
    await kubectl.run(['create', 'namespace', ns]);
    try {
      await kubectl.run(['-n', ns, 'create', 'serviceaccount', 'reader']);
      await kubectl.run(['-n', ns, 'create', 'role', 'reader', '--verb=get', '--resource=configmaps']);
      await kubectl.run([
        '-n',
        ns,
        'create',
        'rolebinding',
        'reader',
        '--role=reader',
        `--serviceaccount=${ns}:reader`,
      ]);
      const path = join(dir, 'kubeconfig');
      await writeServiceAccountKubeconfig(kubectl, {
        namespace: ns,
        name: 'reader',
        server: k.apiServerUrl,
        caPem: k.caCertificatePem,
        path,
      });
      const reader = new Kubectl(await locateKubernetesPrograms(k.binDir), path);
      expect((await reader.run(['auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}'])).trim()).toBe(
        `system:serviceaccount:${ns}:reader`,
      );
      expect(await reader.canI('get', 'configmaps', ['-n', ns])).toBe(true);
      expect(await reader.canI('list', 'configmaps', ['-n', ns])).toBe(false);
      expect(await reader.canI('get', 'secrets', ['-n', ns])).toBe(false);
      // A cluster-scoped resource: kubectl warns about the namespace on stderr and still answers.
      expect(await reader.canI('get', 'nodes', ['-n', ns])).toBe(false);
      expect((await import('node:fs')).statSync(path).mode & 0o777).toBe(0o600);
    } finally {
      await kubectl.run(['delete', 'namespace', ns, '--wait=false']);
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('startApiRelay', () => {
  it('passes requests to the real API server and answers the throttled ones with 429', async () => {
    const k = sharedKubernetes();
    const pki = join(k.root, 'etc', 'kubernetes', 'pki');
    const relay = await startApiRelay({
      target: k.apiServerUrl,
      caPem: k.caCertificatePem,
      tls: {
        cert: await readFile(join(pki, 'apiserver.crt'), 'utf8'),
        key: await readFile(join(pki, 'apiserver.key'), 'utf8'),
      },
    });
    const dir = await mkdtemp(join(tmpdir(), 'constellation-relay-'));
    try {
      const kubectl = await admin();
      const account = `relay-test-${Date.now().toString(36)}`;
      await kubectl.run(['-n', 'kube-system', 'create', 'serviceaccount', account]);
      const token = (await kubectl.run(['-n', 'kube-system', 'create', 'token', account])).trim();
      const path = join(dir, 'kubeconfig');
      await (
        await import('node:fs/promises')
      ).writeFile(path, tokenKubeconfig({ server: relay.url, caPem: k.caCertificatePem, token }));
      const viaRelay = new Kubectl(await locateKubernetesPrograms(k.binDir), path);
      expect((await viaRelay.run(['auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}'])).trim()).toBe(
        `system:serviceaccount:kube-system:${account}`,
      );
      expect(relay.requests.some((r) => r.path === '/apis/authentication.k8s.io/v1/selfsubjectreviews')).toBe(true);
      relay.throttle((r) => r.path.startsWith('/apis/authentication.k8s.io'));
      await expect(viaRelay.run(['auth', 'whoami', '--request-timeout=3s'])).rejects.toThrow(
        /Too many requests|429|timeout/i,
      );
    } finally {
      await relay.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
