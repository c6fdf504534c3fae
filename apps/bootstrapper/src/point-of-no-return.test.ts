import { randomBytes } from 'node:crypto';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { deriveClusterId, deriveMeasurementSecret, markedPcr15 } from '@constellation/keys';
import { waitFor, withTimeout } from '@constellation/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BootstrapOutcome } from './bootstrapper.js';
import { TestNode, callInit, initRequest, startCluster, startJoinServiceProcess } from './node.fixture.js';
import type { Cluster, RunningJoinService } from './node.fixture.js';

// Past the point of no return (the node lock, PCR 15 marked) every failure must end in the fatal
// action: state disk marked for reset, reboot. Found on main: a kubeadm join failing after the
// lock was taken for "no ticket yet", the next attempt found the lock held, and the node hung
// locked forever. Each failure point is made to fail on purpose here, on both paths.
const WORKERS = ['kubeadm-fails', 'prep-fails', 'kubelet-fails', 'kubeadm-hangs'] as const;
let cluster: Cluster;
let controlPlane: TestNode;
let joinService: RunningJoinService | undefined;
const request = initRequest();
const scripts: string[] = [];
/** What beforeAll started, stopped last started first even when it failed half-way. */
const started: (() => Promise<void>)[] = [];

async function script(body: string): Promise<string> {
  const path = join('/tmp', `kubeadm-${randomBytes(4).toString('hex')}`);
  await writeFile(path, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  scripts.push(path);
  return path;
}

beforeAll(async () => {
  cluster = await startCluster([
    { name: 'control-plane-0', role: 'control-plane' },
    ...WORKERS.map((name) => ({ name, role: 'worker' as const })),
    { name: 'cp-prep-fails', role: 'control-plane' },
    { name: 'cp-kubeadm-hangs', role: 'control-plane' },
    { name: 'died-mid-join', role: 'worker' },
    { name: 'restarts-after-join', role: 'worker' },
  ]);
  started.push(() => cluster.close());
  controlPlane = await TestNode.create(cluster, 'control-plane-0', { machine: true });
  started.push(() => controlPlane.stop());
  const outcome = controlPlane.bootstrapper().run();
  await waitFor(() => controlPlane.initPort > 0, { timeoutMs: 20_000, description: 'the InitServer' });
  expect((await callInit(controlPlane, request)).error).toBeUndefined();
  expect(await withTimeout(outcome, 20_000, 'init')).toBe('initialized');
  joinService = await startJoinServiceProcess(cluster, controlPlane, request);
}, 170_000);

afterAll(async () => {
  await joinService?.stop();
  for (const stop of started.splice(0).reverse()) await stop();
  for (const path of scripts) await rm(path, { force: true });
}, 120_000);

/** Runs `node` until its outcome settles; the bootstrapper must have taken the lock and then failed fatally. */
async function failsFatally(node: TestNode, outcome: Promise<BootstrapOutcome>, reason: RegExp): Promise<void> {
  await expect(withTimeout(outcome, 60_000, `${node.context.paths.root} outcome`)).rejects.toThrow(reason);
  expect(node.fatalErrors).toHaveLength(1);
  expect(node.fatalErrors[0]?.message).toMatch(reason);
  // It did commit (PCR 15 marked, lock taken)...
  expect(node.context.lock.heldBy).toBeDefined();
  expect((await node.context.tpm.pcrRead('sha256', [15])).get(15)).not.toEqual(Buffer.alloc(32));
  // ...and then gave up the way it must: the state disk is marked for reset before the reboot.
  expect(await node.context.disk.isInitialized()).toBe(false);
}

/** What the node's join-status.json says: the step the join failed in (or hung in) and why. */
async function joinStatus(node: TestNode): Promise<Record<string, unknown>> {
  return JSON.parse(await readFile(node.context.paths.joinStatus, 'utf8')) as Record<string, unknown>;
}

describe('join: every failure after the lock ends in the fatal action', () => {
  it('kubeadm join fails', async () => {
    const node = await TestNode.create(cluster, 'kubeadm-fails', {
      kubeadm: await script('echo "[preflight] simulated failure: kubelet port in use" >&2\nexit 1'),
    });
    try {
      await failsFatally(
        node,
        node.bootstrapper().run(),
        /join step kubeadm-join failed: kubeadm join failed with exit code 1/,
      );
      expect(await joinStatus(node)).toMatchObject({
        state: 'failed',
        step: 'kubeadm-join',
        message: expect.stringContaining('simulated failure: kubelet port in use') as unknown,
      });
      const clusterId = deriveClusterId(
        deriveMeasurementSecret(request.masterSecret, request.masterSalt),
        request.measurementSalt,
      );
      // Locked to the real cluster, by the real ticket: then reset, not left hanging.
      expect((await node.context.tpm.pcrRead('sha256', [15])).get(15)).toEqual(markedPcr15(clusterId));
    } finally {
      await node.stop();
    }
  });

  it('node preparation fails', async () => {
    const node = await TestNode.create(cluster, 'prep-fails');
    node.context.prepareNode = () => Promise.reject(new Error('component manifest signature is bad (on purpose)'));
    try {
      await failsFatally(
        node,
        node.bootstrapper().run(),
        /join step prepare-node failed: component manifest signature is bad/,
      );
      expect(await joinStatus(node)).toMatchObject({ state: 'failed', step: 'prepare-node' });
    } finally {
      await node.stop();
    }
  });

  it('the kubelet does not start', async () => {
    // The real kubeadm join runs (and starts the kubelet itself); the bootstrapper's own start fails.
    const node = await TestNode.create(cluster, 'kubelet-fails', { machine: true });
    node.context.startKubelet = () => Promise.reject(new Error('systemctl start kubelet exited with 1 (on purpose)'));
    try {
      await failsFatally(
        node,
        node.bootstrapper().run(),
        /join step start-kubelet failed: systemctl start kubelet exited with 1/,
      );
      expect(await joinStatus(node)).toMatchObject({ state: 'failed', step: 'start-kubelet' });
    } finally {
      await node.stop();
    }
  });

  it('kubeadm join hangs past the deadline', async () => {
    const node = await TestNode.create(cluster, 'kubeadm-hangs', { kubeadm: await script('sleep 30') });
    try {
      const outcome = node.bootstrapper({ committedTimeoutMs: 3_000 }).run();
      outcome.catch(() => undefined);
      // Found by the power-loss fault test (npm run e2e): a node that lost power here rebooted into
      // a disk marked as the cluster's, "rejoined" a cluster it never joined and hung outside it.
      // While kubeadm join runs the disk opens only with the cluster's key but is not the cluster's
      // yet: a power loss now boots a fresh disk, and the node joins anew.
      await waitFor(
        async () => (await joinStatus(node).catch((): Record<string, unknown> => ({})))['step'] === 'kubeadm-join',
        {
          timeoutMs: 30_000,
          description: 'the node at kubeadm join',
        },
      );
      expect(await node.context.disk.isInitialized()).toBe(false);
      await failsFatally(
        node,
        outcome,
        /did not finish joining the cluster within 3000 ms after the point of no return \(stuck in join step kubeadm-join\)/,
      );
      expect(await joinStatus(node)).toMatchObject({ state: 'joining', step: 'kubeadm-join' });
    } finally {
      await node.stop();
    }
  });
});

describe('init: every failure after the lock ends in the fatal action', () => {
  async function initFails(node: TestNode, reason: RegExp, committedTimeoutMs?: number): Promise<void> {
    const outcome = node.bootstrapper(committedTimeoutMs === undefined ? {} : { committedTimeoutMs }).run();
    outcome.catch(() => undefined);
    await waitFor(() => node.initPort > 0, { timeoutMs: 20_000, description: 'the InitServer' });
    const init = await callInit(node, initRequest());
    if (committedTimeoutMs === undefined) {
      const failure = init.messages.find((m) => m.kind?.$case === 'failure')?.kind;
      expect(failure?.$case === 'failure' && failure.value.retrySafe).toBe(false);
    }
    await failsFatally(node, outcome, reason);
  }

  it('node preparation fails', async () => {
    const node = await TestNode.create(cluster, 'cp-prep-fails');
    node.context.prepareNode = () => Promise.reject(new Error('component download exceeded its size (on purpose)'));
    try {
      await initFails(node, /component download exceeded its size/);
    } finally {
      await node.stop();
    }
  });

  it('the kubelet does not start', async () => {
    // A cluster of its own: kubeadm init points the admin kubeconfig at the cluster endpoint.
    const own = await startCluster([{ name: 'cp-kubelet-fails', role: 'control-plane' }]);
    try {
      // The real kubeadm init runs (and starts the kubelet itself); the bootstrapper's own start fails.
      const node = await TestNode.create(own, 'cp-kubelet-fails', { machine: true });
      node.context.startKubelet = () => Promise.reject(new Error('kubelet start refused (on purpose)'));
      try {
        await initFails(node, /kubelet start refused/);
      } finally {
        await node.stop();
      }
    } finally {
      await own.close();
    }
  });

  it('kubeadm init hangs past the deadline', async () => {
    const node = await TestNode.create(cluster, 'cp-kubeadm-hangs', { kubeadm: await script('sleep 30') });
    try {
      await initFails(node, /did not finish joining the cluster within 3000 ms after the point of no return/, 3_000);
    } finally {
      await node.stop();
    }
  });
});

// systemd restarts a bootstrapper that died (Restart=on-failure), and PCR 15 stays marked until
// the machine reboots. Found on main: a process that died between the point of no return and the
// end of kubeadm came back, saw the mark, and started the kubelet of a node that never joined; the
// node hung outside the cluster, with nothing rebooting it.
describe('a bootstrapper restarted during the boot in which it passed the point of no return', () => {
  it('that died before its node was configured marks the state disk for reset and reboots, starting no kubelet', async () => {
    const node = await TestNode.create(cluster, 'died-mid-join');
    try {
      // What the dead process left: a state disk of a cluster's, and PCR 15 marked by the lock.
      await node.context.disk.format(randomBytes(32));
      await node.context.disk.setInitialized(true);
      expect(await node.context.lock.tryLock(randomBytes(32), 'join')).toBe(true);
      const reason =
        /PCR 15 is marked, but this boot's bootstrapper stopped before the node's Kubernetes configuration was complete/;
      await expect(withTimeout(node.bootstrapper().run(), 30_000, 'restart')).rejects.toThrow(reason);
      expect(node.kubeletStarts).toBe(0);
      expect(node.fatalErrors.map((e) => e.message)).toEqual([expect.stringMatching(reason)]);
      expect(await node.context.disk.isInitialized()).toBe(false);
    } finally {
      await node.stop();
    }
  });

  it('that died after its node joined starts the kubelet again', async () => {
    const node = await TestNode.create(cluster, 'restarts-after-join', { machine: true });
    try {
      expect(await withTimeout(node.bootstrapper().run(), 60_000, 'join')).toBe('joined');
      expect(node.kubeletStarts).toBe(1);
      expect(await withTimeout(node.bootstrapper().run(), 30_000, 'restart')).toBe('already-bootstrapped');
      expect(node.kubeletStarts).toBe(2);
      expect(node.fatalErrors).toEqual([]);
      expect(await node.context.disk.isInitialized()).toBe(true);
    } finally {
      await node.stop();
    }
  });
});
