import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { kubernetesBinDir, repoRoot, runCommand, tempDirForTest, waitFor } from '@constellation/testing';
import { describe, expect, it } from 'vitest';
import { unitLog } from '@constellation/node-environment';
import type { MiniNode, MiniState } from './mini/mini-state.js';
import { BOOTSTRAPPER_UNIT } from './mini/start-node.js';

const root = repoRoot();
const cli = join(root, 'apps/cli/dist/constellation.mjs');
// Five real nodes on 2 cores: about 80 s when the machine is otherwise idle, and more under load.
const constellation = (workspace: string, ...args: string[]) =>
  runCommand(process.execPath, [cli, '--workspace', workspace, ...args], { timeoutMs: 360_000 });
/** The built kubectl, of the cluster's release. */
const kubectl = (kubeconfig: string, ...args: string[]) =>
  runCommand(join(kubernetesBinDir(), 'kubectl'), ['--kubeconfig', kubeconfig, '--request-timeout=20s', ...args], {
    timeoutMs: 60_000,
  });

/** A kubeconfig for the cluster's API with `user` as credentials (none when undefined). */
async function kubeconfigAs(
  dir: string,
  name: string,
  server: string,
  caPem: string,
  user: { cert: string; key: string } | undefined,
): Promise<string> {
  const b64 = (text: string): string => Buffer.from(text).toString('base64');
  const path = join(dir, `${name}.kubeconfig`);
  await writeFile(
    path,
    [
      'apiVersion: v1',
      'kind: Config',
      `clusters: [{name: mini, cluster: {server: "${server}", certificate-authority-data: ${b64(caPem)}}}]`,
      `users: [{name: ${name}, user: ${user === undefined ? '{}' : `{client-certificate-data: ${b64(user.cert)}, client-key-data: ${b64(user.key)}}`}}]`,
      `contexts: [{name: ${name}, context: {cluster: mini, user: ${name}}}]`,
      `current-context: ${name}`,
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  return path;
}

const bootstrapperLog = (node: MiniNode): Promise<string> => readFile(unitLog(node.dir, BOOTSTRAPPER_UNIT), 'utf8');

describe('mini as a cluster kubectl can drive', () => {
  it('three control planes and two workers: kubectl sees them Ready, strangers get 403, a control plane reboots and all recover', async () => {
    // A space in the path, as under "My Projects": every command mini hands a node must survive it.
    const workspace = join(await tempDirForTest(), 'my cluster');
    await mkdir(workspace);
    const admin = join(workspace, 'constellation-admin.conf');
    try {
      const up = await constellation(
        workspace,
        'mini',
        'up',
        '--kubernetes-bin-dir',
        kubernetesBinDir(),
        '--control-planes',
        '3',
        '--workers',
        '2',
      );
      expect(up.stderr).not.toContain('error');
      expect(up.code).toBe(0);
      const state = JSON.parse(await readFile(join(workspace, 'constellation-mini', 'mini.json'), 'utf8')) as MiniState;
      for (const name of ['control-plane-0', 'control-plane-1', 'control-plane-2', 'worker-1', 'worker-2'])
        expect(up.stdout.toString()).toMatch(
          new RegExp(`${name}\\s+\\S+\\s+\\S+\\s+(initialised|joined)\\s+True\\s+measurements match`),
        );

      // kubectl, the real client, with the admin kubeconfig init wrote (printers.go columns).
      const nodes = await kubectl(admin, 'get', 'nodes');
      expect(nodes.code).toBe(0);
      for (const cp of ['control-plane-0', 'control-plane-1', 'control-plane-2'])
        expect(nodes.stdout.toString()).toMatch(new RegExp(`${cp}\\s+Ready\\s+control-plane\\s`));
      for (const worker of ['worker-1', 'worker-2'])
        expect(nodes.stdout.toString()).toMatch(new RegExp(`${worker}\\s+Ready\\s+<none>\\s`));
      const secrets = await kubectl(admin, 'get', 'secrets', '-n', 'kube-system');
      expect(secrets.code).toBe(0);
      expect(secrets.stdout.toString()).toMatch(/bootstrap-token-[a-z0-9]{6}\s+bootstrap\.kubernetes\.io\/token/);
      const leases = await kubectl(admin, 'get', 'leases', '-A');
      expect(leases.stdout.toString()).toMatch(/kube-system\s+constellation-control-plane-join\s+control-plane-[12]\s/);
      // Only tokens the JoinService minted for attested nodes: kubeadm init's own token is gone.
      const tokens = await kubectl(
        admin,
        'get',
        'secrets',
        '-n',
        'kube-system',
        '--field-selector',
        'type=bootstrap.kubernetes.io/token',
        '-o',
        'jsonpath={range .items[*]}{.metadata.labels.constellation\\.dev/minted-by}{"\\n"}{end}',
      );
      expect(tokens.code).toBe(0);
      const minters = tokens.stdout.toString().trim().split('\n');
      expect(minters.length).toBeGreaterThanOrEqual(4);
      expect(new Set(minters)).toEqual(new Set(['joinservice']));
      // kubeadm's kubelet TLS bootstrap grants are gone: a ticket token cannot get another
      // node's client certificate (the tickets carry each node's own).
      for (const binding of ['kubeadm:kubelet-bootstrap', 'kubeadm:node-autoapprove-bootstrap']) {
        const lookup = await kubectl(admin, 'get', 'clusterrolebinding', binding);
        expect(lookup.stderr).toContain(`clusterrolebindings.rbac.authorization.k8s.io "${binding}" not found`);
      }

      // Strangers: no credentials → system:anonymous (kube-apiserver as kubeadm runs it keeps anonymous
      // requests on, for /readyz and the like), which RBAC grants nothing here → 403; a worker's
      // kubelet certificate → 403 (node authorizer + RBAC).
      const [first, , , worker] = state.nodes;
      if (first === undefined || worker === undefined) throw new Error('nodes missing');
      const caPem = await readFile(join(first.dir, 'etc', 'kubernetes', 'pki', 'ca.crt'), 'utf8');
      const server = `https://${first.ip}:${state.apiServerPort}`;
      const anonymous = await kubectl(
        await kubeconfigAs(workspace, 'anonymous', server, caPem, undefined),
        'get',
        'secrets',
        '-n',
        'kube-system',
        // Without these kubectl prompts for them; basic auth authenticates nobody since 1.19.
        '--username=nobody',
        '--password=nothing',
      );
      expect(anonymous.code).not.toBe(0);
      expect(anonymous.stderr).toContain(
        'Error from server (Forbidden): secrets is forbidden: User "system:anonymous" cannot list resource "secrets" in API group "" in the namespace "kube-system"',
      );
      const kubeletPem = await readFile(
        join(worker.dir, 'var', 'lib', 'kubelet', 'pki', 'kubelet-client-current.pem'),
        'utf8',
      );
      const certPem = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n?/.exec(kubeletPem)?.[0] ?? '';
      const keyPem =
        /-----BEGIN (?:EC |RSA )?PRIVATE KEY-----[\s\S]+?-----END (?:EC |RSA )?PRIVATE KEY-----\n?/.exec(
          kubeletPem,
        )?.[0] ?? '';
      const asWorker = await kubeconfigAs(workspace, 'worker', server, caPem, { cert: certPem, key: keyPem });
      const forbidden = await kubectl(asWorker, 'get', 'secrets', '-n', 'kube-system');
      expect(forbidden.code).not.toBe(0);
      expect(forbidden.stderr).toContain(
        `secrets is forbidden: User "system:node:${worker.name}" cannot list resource "secrets" in API group "" in the namespace "kube-system"`,
      );

      // The CLI on the PATH: npx constellation status shows Ready and attestation from the API.
      const status = await runCommand('npx', ['--no-install', 'constellation', '--workspace', workspace, 'status'], {
        timeoutMs: 60_000,
        cwd: root,
      });
      expect(status.stderr).not.toContain('could not determine executable');
      expect(status.code).toBe(0);
      for (const node of state.nodes)
        expect(status.stdout.toString()).toMatch(new RegExp(`${node.name}\\s+\\S+\\s+True\\s+attested`));

      // The first control plane reboots: the API endpoint (the load balancer in front of the control
      // planes) keeps answering, and the node rejoins.
      expect((await constellation(workspace, 'mini', 'reboot', first.name)).code).toBe(0);
      expect((await kubectl(admin, 'get', 'nodes')).code).toBe(0);
      await waitFor(async () => (await bootstrapperLog(first)).includes('"source":"rejoin-ticket"'), {
        timeoutMs: 60_000,
        description: `${first.name} to rejoin`,
      });

      // Full control-plane shutdown: every control plane reboots without JoinService; recover brings them back.
      const controlPlanes = state.nodes.filter((n) => n.role === 'control-plane');
      const listening = async (cp: MiniNode): Promise<number> =>
        (await bootstrapperLog(cp)).split('recovery server listening').length - 1;
      const before = await Promise.all(controlPlanes.map(listening));
      for (const [i, cp] of controlPlanes.entries()) {
        const args = ['mini', 'reboot', cp.name, ...(i === 0 ? ['--stop-joinservice'] : [])];
        expect((await constellation(workspace, ...args)).code).toBe(0);
      }
      for (const [i, cp] of controlPlanes.entries())
        await waitFor(async () => (await listening(cp)) > (before[i] ?? 0), {
          timeoutMs: 60_000,
          description: `${cp.name} waiting for recovery`,
        });
      const recovered = await Promise.all(
        controlPlanes.map((cp) => constellation(workspace, 'recover', '--endpoint', `${cp.ip}:${cp.recoveryPort}`)),
      );
      for (const result of recovered) {
        expect(result.stderr).toBe('');
        expect(result.stdout.toString()).toMatch(/recovered: state disk [0-9a-f-]{36} open, cluster [0-9a-f]{64}/);
      }
      for (const cp of controlPlanes) {
        await waitFor(async () => (await bootstrapperLog(cp)).includes('"source":"recovery"'), {
          timeoutMs: 60_000,
          description: `${cp.name} to come back`,
        });
      }
      // The kubelets started again after the recovery: the control planes' static pods came back
      // (etcd has its quorum), every node is Ready, and each control plane runs its JoinService pod.
      await waitFor(
        async () => {
          const ready = await kubectl(admin, 'get', 'nodes', '--no-headers');
          const lines = ready.stdout.toString().trim().split('\n');
          return lines.length === state.nodes.length && lines.every((line) => /\sReady\s/.test(line));
        },
        { timeoutMs: 120_000, description: 'every node Ready again' },
      );
      await waitFor(
        async () => {
          const pods = await kubectl(
            admin,
            'get',
            'pods',
            '-n',
            'kube-system',
            '-l',
            'k8s-app=join-service',
            '--no-headers',
          );
          return (
            pods.stdout
              .toString()
              .split('\n')
              .filter((line) => /\s1\/1\s+Running\s/.test(line)).length === 3
          );
        },
        { timeoutMs: 120_000, description: "every control plane's JoinService pod Running" },
      );
    } finally {
      expect((await constellation(workspace, 'mini', 'down')).code).toBe(0);
    }
  }, 900_000);
});
