// Faults on a real mini cluster (`npm run e2e`; too long for npm test): a node losing power half-way
// through kubeadm join, a worker cut off from the control plane mid-join, the JoinService killed in
// the middle of a join storm, an etcd member killed while workers join, and every node of a 3 + 2
// cluster losing power at once. Each asserts that nothing is lost or left over: every node joins
// and is Ready, no join credential is left in the cluster (joins mint no bootstrap token), and
// objects written before are there after.
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { beforeEach, describe, expect, it } from 'vitest';
import { imagesDirBeside, readImagesManifest, sandboxImage } from '@constellation/kubernetes-programs';
import { canConnect } from '@constellation/swtpm';
import { kubernetesBinDir, sleep, waitFor } from '@constellation/testing';
import { BOOTSTRAPPER_UNIT } from '../mini/providers/namespace-node.js';
import { killAll, useFaultCluster } from './mini-faults.fixture.js';
import type { FaultCluster, KubeObject } from './mini-faults.fixture.js';

const MINUTE = 60_000;

/**
 * What a join leaves in the cluster: its Node, nothing of the JoinService's. Nodes join with the
 * kubelet certificate of their ticket (kubeadm's file discovery), so no bootstrap token may exist,
 * however often a node asked, whatever was killed; and every joined node is Ready.
 */
async function expectNoTokensAndReady(cluster: FaultCluster, joined: readonly string[]): Promise<void> {
  expect(await cluster.joinTokens()).toEqual([]);
  expect(await cluster.readyNodes()).toEqual(expect.arrayContaining([...joined]));
}

const bootstrapperLog = async (cluster: FaultCluster, name: string): Promise<string> =>
  readFile((await cluster.machine(name)).logPath(BOOTSTRAPPER_UNIT), 'utf8').catch(() => '');

const joiningAtKubeadmJoin = (status: { state: string; step?: string }): boolean =>
  status.state === 'joining' && status.step === 'kubeadm-join';

describe('one control plane, workers joining through faults', () => {
  const fault = useFaultCluster('faults-', ['--workers', '0', '--powered-off-workers', '6'], 15 * MINUTE);
  let cluster: FaultCluster;
  beforeEach(() => {
    cluster = fault();
  });

  it(
    'a worker that loses power half-way through kubeadm join (past the node lock) resets and joins at its next boot',
    async () => {
      await cluster.cli(['mini', 'start', 'worker-1']);
      await cluster.waitForJoinStatus('worker-1', joiningAtKubeadmJoin, 'at kubeadm join, past the node lock');
      await cluster.cli(['mini', 'stop', 'worker-1', '--power-loss']);
      const before = await bootstrapperLog(cluster, 'worker-1');
      await cluster.cli(['mini', 'start', 'worker-1']);
      await cluster.waitForJoined(['worker-1'], 8 * MINUTE);
      // It started over on a fresh disk: the disk was not the cluster's before kubeadm join finished.
      const after = (await bootstrapperLog(cluster, 'worker-1')).slice(before.length);
      expect(after).not.toContain('state disk belongs to a cluster: rejoining');
      expect(after).toContain('"message":"joined the cluster"');
      await expectNoTokensAndReady(cluster, ['worker-1']);
    },
    12 * MINUTE,
  );

  it(
    'a worker cut off from the network in the middle of kubeadm join joins once the network heals, never half-joined',
    async () => {
      await cluster.cli(['mini', 'start', 'worker-2']);
      await cluster.waitForJoinStatus('worker-2', joiningAtKubeadmJoin, 'at kubeadm join');
      const machine = await cluster.machine('worker-2');
      // Every packet in or out of the node's network namespace dropped, but its loopback.
      await machine.exec(['nft', 'add', 'table', 'inet', 'fault']);
      for (const hook of ['input', 'output']) {
        await machine.exec([
          'nft',
          'add',
          'chain',
          'inet',
          'fault',
          hook,
          `{ type filter hook ${hook} priority -300 ; policy drop ; }`,
        ]);
        await machine.exec([
          'nft',
          'add',
          'rule',
          'inet',
          'fault',
          hook,
          hook === 'input' ? 'iif' : 'oif',
          'lo',
          'accept',
        ]);
      }
      // The cut holds: the node cannot reach the API server; the host still can.
      const apiServer = (await cluster.node('control-plane-0')).ip;
      await expect(
        machine.exec(['timeout', '3', 'bash', '-c', `exec 3<>/dev/tcp/${apiServer}/6443`]),
      ).rejects.toThrow();
      expect(await canConnect({ host: apiServer, port: 6443 })).toBe(true);
      await sleep(30_000);
      await machine.exec(['nft', 'delete', 'table', 'inet', 'fault']);
      // It rides the cut out, or stops with its reason and joins at its next boot.
      const outcome = await waitFor(
        async () => {
          const status = await cluster.joinStatus('worker-2');
          if (status?.state === 'joined') return 'joined';
          return status?.state === 'failed' ? `failed: ${status.message ?? ''}` : undefined;
        },
        { timeoutMs: 8 * MINUTE, intervalMs: 1_000, description: 'worker-2 to join or fail after the cut' },
      );
      if (outcome !== 'joined') {
        expect(outcome).toMatch(/^failed: .*kubeadm-join/);
        await cluster.cli(['mini', 'reboot', 'worker-2']);
      }
      await cluster.waitForJoined(['worker-2'], 8 * MINUTE);
      await expectNoTokensAndReady(cluster, ['worker-1', 'worker-2']);
    },
    20 * MINUTE,
  );

  it(
    'the JoinService killed in the middle of a join storm: its DaemonSet restarts it and every node joins',
    async () => {
      const storm = ['worker-3', 'worker-4', 'worker-5', 'worker-6'];
      await cluster.cli(['mini', 'start', ...storm]);
      // The first ticket is out: the others are asking or about to.
      await waitFor(
        async () => {
          const states = await Promise.all(storm.map((name) => cluster.joinStatus(name)));
          return states.some((s) => s?.state === 'ticket' || s?.state === 'joining');
        },
        { timeoutMs: 5 * MINUTE, intervalMs: 100, description: 'the first ticket of the storm' },
      );
      const joinService = await cluster.processes('control-plane-0', (command) =>
        command.includes('--master-secret-file='),
      );
      expect(joinService.length, 'the JoinService process on control-plane-0').toBeGreaterThan(0);
      killAll(joinService);
      await waitFor(
        async () => {
          const pods = await cluster.kubectlJson<{ items: KubeObject[] }>(
            'get',
            'pods',
            '-n',
            'kube-system',
            '-l',
            'k8s-app=join-service',
          );
          return pods.items.some((pod) => pod.status?.containerStatuses?.some((c) => c.restartCount >= 1 && c.ready));
        },
        { timeoutMs: 3 * MINUTE, intervalMs: 1_000, description: 'the JoinService container restarted and ready' },
      );
      await cluster.waitForJoined(storm, 10 * MINUTE);
      await expectNoTokensAndReady(cluster, ['worker-1', 'worker-2', ...storm]);
    },
    16 * MINUTE,
  );
});

describe('three control planes: an etcd member killed while workers join, then a power loss of every node', () => {
  const workers = ['worker-1', 'worker-2'];
  const controlPlanes = ['control-plane-0', 'control-plane-1', 'control-plane-2'];
  const fault = useFaultCluster(
    'faults-ha-',
    ['--control-planes', '3', '--workers', '0', '--powered-off-workers', '2'],
    20 * MINUTE,
  );
  let cluster: FaultCluster;
  beforeEach(() => {
    cluster = fault();
  });

  it(
    "one control plane's etcd member SIGKILLed while workers join: the joins complete and the member comes back",
    async () => {
      const isEtcd = (command: string): boolean => command.startsWith('etcd ');
      const etcdBefore = await cluster.processes('control-plane-1', isEtcd);
      expect(etcdBefore.length, "control-plane-1's etcd").toBe(1);
      await cluster.cli(['mini', 'start', ...workers]);
      await waitFor(
        async () => {
          const states = await Promise.all(workers.map((name) => cluster.joinStatus(name)));
          return states.some((s) => s !== undefined);
        },
        { timeoutMs: 5 * MINUTE, intervalMs: 100, description: 'a worker asking the JoinService' },
      );
      killAll(etcdBefore);
      await cluster.waitForJoined(workers, 10 * MINUTE);
      // The kubelet started the static pod's container again, and the member serves its API server.
      await waitFor(
        async () => {
          const now = await cluster.processes('control-plane-1', isEtcd);
          return now.length === 1 && !etcdBefore.includes(now[0] ?? 0);
        },
        { timeoutMs: 3 * MINUTE, intervalMs: 1_000, description: "control-plane-1's etcd running again" },
      );
      const cp1 = await cluster.node('control-plane-1');
      await waitFor(
        async () =>
          (await cluster.kubectl('--server', `https://${cp1.ip}:6443`, 'get', '--raw', '/readyz/etcd')) === 'ok',
        { timeoutMs: 3 * MINUTE, intervalMs: 2_000, description: "control-plane-1's API server reading its etcd" },
      );
      await expectNoTokensAndReady(cluster, [...controlPlanes, ...workers]);
    },
    16 * MINUTE,
  );

  it(
    'every node loses power at once; booted again and recovered, the cluster has what was written before',
    async () => {
      const content = randomBytes(16).toString('hex');
      await cluster.kubectl('create', 'configmap', 'before-power-loss', `--from-literal=content=${content}`);
      const pause = sandboxImage(
        await readImagesManifest(imagesDirBeside(kubernetesBinDir()), 'node tools/kubernetes/images.mjs'),
        imagesDirBeside(kubernetesBinDir()),
      ).reference;
      await cluster.kubectl('create', 'deployment', 'survivor', `--image=${pause}`, '--replicas=2');
      await cluster.kubectl('rollout', 'status', 'deployment/survivor', '--timeout=180s');

      await cluster.cli(['mini', 'stop', '--all', '--power-loss']);
      const logsBefore = new Map(
        await Promise.all(
          controlPlanes.map(async (name) => [name, (await bootstrapperLog(cluster, name)).length] as const),
        ),
      );
      await cluster.cli(['mini', 'start', '--all']);
      // Each control plane serves recovery (no JoinService runs: no etcd quorum) and gets its disk key.
      await Promise.all(
        controlPlanes.map(async (name) => {
          const node = await cluster.node(name);
          await waitFor(
            async () =>
              (await bootstrapperLog(cluster, name)).slice(logsBefore.get(name)).includes('recovery server listening'),
            { timeoutMs: 3 * MINUTE, intervalMs: 500, description: `${name}'s recovery server` },
          );
          try {
            expect(await cluster.cli(['recover', '--endpoint', `${node.ip}:${node.recoveryPort}`], 2 * MINUTE)).toMatch(
              /recovered: state disk [0-9a-f-]{36} open/,
            );
          } catch (error) {
            // The last one may have rejoined through a JoinService the first two brought back.
            const log = (await bootstrapperLog(cluster, name)).slice(logsBefore.get(name));
            if (!log.includes('"source":"rejoin-ticket"')) throw error;
          }
        }),
      );
      await cluster.waitForReady([...controlPlanes, ...workers], 12 * MINUTE);
      const configMap = await cluster.kubectlJson<KubeObject>('get', 'configmap', 'before-power-loss');
      expect(configMap.data).toEqual({ content });
      await cluster.kubectl('rollout', 'status', 'deployment/survivor', '--timeout=300s');
      await expectNoTokensAndReady(cluster, [...controlPlanes, ...workers]);
    },
    30 * MINUTE,
  );
});
