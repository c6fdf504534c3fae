import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCommand, sharedKubernetes } from '@constellation/testing';
import { startControlPlane } from './control-plane.js';
import { isRunning } from '@constellation/process';
import { locateKubernetesPrograms } from '@constellation/kubernetes-programs';

/** The built kubectl against the run's control plane as system:masters. */
async function kubectl(args: readonly string[]): Promise<string> {
  const k = sharedKubernetes();
  const result = await runCommand(join(k.binDir, 'kubectl'), ['--kubeconfig', k.superAdminKubeconfig, ...args], {
    timeoutMs: 30_000,
  });
  if (result.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${result.stderr}`);
  return result.stdout.toString('utf8');
}

describe('the real control plane', () => {
  it('answers kubectl version with the built release for client and server', async () => {
    const version = JSON.parse(await kubectl(['version', '-o', 'json'])) as {
      clientVersion: { gitVersion: string };
      serverVersion: { gitVersion: string };
    };
    expect(version.clientVersion.gitVersion).toBe(sharedKubernetes().release);
    expect(version.serverVersion.gitVersion).toBe(sharedKubernetes().release);
    expect(sharedKubernetes().release).toMatch(/^v1\.37\.\d+$/);
  });

  it('serves the whole API: pods, events and daemonsets among its resources', async () => {
    const names = (await kubectl(['api-resources', '-o', 'name'])).split('\n');
    expect(names).toEqual(expect.arrayContaining(['pods', 'events', 'daemonsets.apps', 'leases.coordination.k8s.io']));
  });

  it('runs the controllers kubeadm enables: the bootstrap signer signs cluster-info for a signing token', async () => {
    const id = Math.random().toString(36).slice(2, 8).padEnd(6, '0');
    await kubectl([
      '-n',
      'kube-system',
      'create',
      'secret',
      'generic',
      `bootstrap-token-${id}`,
      '--type=bootstrap.kubernetes.io/token',
      `--from-literal=token-id=${id}`,
      '--from-literal=token-secret=0123456789abcdef',
      '--from-literal=usage-bootstrap-signing=true',
    ]);
    try {
      const deadline = Date.now() + 30_000;
      let data: Record<string, string> = {};
      while (Date.now() < deadline && data[`jws-kubeconfig-${id}`] === undefined) {
        data = (
          JSON.parse(await kubectl(['-n', 'kube-public', 'get', 'configmap', 'cluster-info', '-o', 'json'])) as {
            data: Record<string, string>;
          }
        ).data;
        if (data[`jws-kubeconfig-${id}`] === undefined) await new Promise((r) => setTimeout(r, 250));
      }
      expect(data[`jws-kubeconfig-${id}`]).toMatch(/^[\w-]+\.\.[\w-]+$/);
    } finally {
      await kubectl(['-n', 'kube-system', 'delete', 'secret', `bootstrap-token-${id}`]);
    }
  });

  it('says which program failed to start, with the end of its log, and leaves none running', async () => {
    const k = sharedKubernetes();
    const dir = await mkdtemp(join(tmpdir(), 'constellation-second-control-plane-'));
    try {
      // The run's control plane already holds etcd's and the API server's ports in this namespace.
      const error = await startControlPlane({
        programs: await locateKubernetesPrograms(k.binDir),
        dir,
        network: { namespace: k.namespace, ip: k.ip },
        startTimeoutMs: 60_000,
      }).then(
        () => new Error('a second control plane started on ports already in use'),
        (e: unknown) => e as Error,
      );
      expect(error.message).toMatch(/(etcd|kube-apiserver) exited; the end of its log:\n[\s\S]*address already in use/);
      const state = JSON.parse(
        await import('node:fs/promises').then((fs) => fs.readFile(join(dir, 'control-plane.json'), 'utf8')),
      ) as {
        processes: { pid: number }[];
      };
      expect(state.processes.length).toBeGreaterThan(0);
      expect(state.processes.filter((p) => isRunning(p.pid))).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('locateKubernetesPrograms', () => {
  it('names the build command when a directory holds no build', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'constellation-no-programs-'));
    try {
      await expect(locateKubernetesPrograms(dir)).rejects.toThrow('build them with: node tools/kubernetes/build.mjs');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
