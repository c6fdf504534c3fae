import { createServer, connect } from 'node:net';
import type { Server, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { resourceType, startTestCluster } from '../kube-api/test-cluster.fixture.js';
import type { TestCluster } from '../kube-api/test-cluster.fixture.js';
import { SHORT_RETRY_INTERVAL_MS, SHORT_RETRY_TIMEOUT_MS } from './config-map-short-retry.js';
import { fetchClusterConfiguration } from './kubeadm-config-map.js';
import { fetchKubeletConfiguration } from './kubelet-config-map.js';

// Join's preflight reads kubelet-config and kubeadm-config with kubeadm's
// apiclient.GetConfigMapWithShortRetry (cmd/kubeadm/app/util/apiclient/idempotency.go, 1.30 on:
// wait.PollUntilContextTimeout, 50 ms interval, 350 ms timeout, immediate; any error retried, the
// last one returned), called from componentconfigs/configset.go fromConfigMap (kubelet-config,
// mustExist) and util/config/cluster.go getInitConfigurationFromCluster (kubeadm-config).

const TOKEN = 'abcdef.0123456789abcdef';

let cluster: TestCluster;

beforeAll(async () => {
  cluster = await startTestCluster();
  const data = {
    'token-id': 'abcdef',
    'token-secret': '0123456789abcdef',
    'usage-bootstrap-authentication': 'true',
    'auth-extra-groups': 'system:bootstrappers:kubeadm:default-node-token',
  };
  cluster.api.store.create(resourceType('secrets'), 'kube-system', {
    metadata: { name: 'bootstrap-token-abcdef' },
    type: 'bootstrap.kubernetes.io/token',
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
  });
  cluster.api.store.create(resourceType('configmaps'), 'kube-system', {
    metadata: { name: 'kubelet-config' },
    data: { kubelet: stringify({ apiVersion: 'kubelet.config.k8s.io/v1beta1', kind: 'KubeletConfiguration' }) },
  });
});

afterAll(async () => {
  await cluster.close();
});

/** A port nothing listens on: bound by the kernel's choice, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => {
    server.close(() => {
      resolve();
    });
  });
  return port;
}

/** From `port` on, a TCP relay to the API stand-in (the server "comes up" there). */
async function relayOn(port: number): Promise<{ close(): Promise<void> }> {
  const target = Number(new URL(cluster.api.url).port);
  const sockets = new Set<Socket>();
  const relay: Server = createServer((socket) => {
    const upstream = connect(target, '127.0.0.1');
    sockets.add(socket).add(upstream);
    socket.pipe(upstream).pipe(socket);
    socket.on('error', () => upstream.destroy());
    upstream.on('error', () => socket.destroy());
  });
  await new Promise<void>((resolve) => relay.listen(port, '127.0.0.1', resolve));
  return {
    // The client keeps its connection alive: end it too, or close waits for its idle timeout.
    close: () =>
      new Promise<void>((resolve) => {
        relay.close(() => {
          resolve();
        });
        for (const socket of sockets) socket.destroy();
      }),
  };
}

describe('GetConfigMapWithShortRetry (cmd/kubeadm/app/util/apiclient/idempotency.go)', () => {
  it('a server that refuses connections for the first ~150 ms: retried, the download succeeds', async () => {
    const port = await closedPort();
    const download = fetchKubeletConfiguration(`https://127.0.0.1:${port}`, cluster.caPem, TOKEN);
    await new Promise((resolve) => setTimeout(resolve, 150));
    const relay = await relayOn(port);
    try {
      await expect(download).resolves.toEqual({
        apiVersion: 'kubelet.config.k8s.io/v1beta1',
        kind: 'KubeletConfiguration',
      });
    } finally {
      await relay.close();
    }
  });

  it('a server that never listens: fails after the 350 ms, with the last error wrapped as kubeadm wraps it', async () => {
    const port = await closedPort();
    const started = Date.now();
    const error = await fetchKubeletConfiguration(`https://127.0.0.1:${port}`, cluster.caPem, TOKEN).catch(
      (err: unknown) => err as Error,
    );
    const elapsed = Date.now() - started;
    // Tries at 0, 50, ..., 300 ms; the 350 ms context ends the poll.
    expect(elapsed).toBeGreaterThanOrEqual(SHORT_RETRY_TIMEOUT_MS - SHORT_RETRY_INTERVAL_MS);
    expect(elapsed).toBeLessThan(5_000);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toBe(
      `unable to fetch the kubeadm-config ConfigMap: failed to get component configs: could not download the kubelet configuration from ConfigMap "kubelet-config": Get "https://127.0.0.1:${port}/api/v1/namespaces/kube-system/configmaps/kubelet-config": dial tcp 127.0.0.1:${port}: connect: connection refused`,
    );
  });

  it('an error answer is retried for the same 350 ms only, not for timeouts.kubernetesAPICall', async () => {
    const started = Date.now();
    const error = await fetchClusterConfiguration(cluster.api.url, cluster.caPem, TOKEN).catch(
      (err: unknown) => err as Error,
    );
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(SHORT_RETRY_TIMEOUT_MS - SHORT_RETRY_INTERVAL_MS);
    expect(elapsed).toBeLessThan(5_000);
    // No kubeadm-config in this cluster: getInitConfigurationFromCluster's wrap of the 404.
    expect((error as Error).message).toBe(
      'unable to fetch the kubeadm-config ConfigMap: failed to get config map: configmaps "kubeadm-config" not found',
    );
  });

  it('a try that outlasts the 350 ms is the last one (loopConditionUntilContext checks the context first)', async () => {
    let connections = 0;
    const sockets = new Set<Socket>();
    const slow = createServer((socket) => {
      connections++;
      sockets.add(socket);
      setTimeout(() => socket.destroy(), SHORT_RETRY_TIMEOUT_MS + 100);
    });
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    const { port } = slow.address() as { port: number };
    try {
      const error = await fetchKubeletConfiguration(`https://127.0.0.1:${port}`, cluster.caPem, TOKEN).catch(
        (err: unknown) => err as Error,
      );
      expect((error as Error).message).toContain(
        `could not download the kubelet configuration from ConfigMap "kubelet-config": Get "https://127.0.0.1:${port}/api/v1/namespaces/kube-system/configmaps/kubelet-config": `,
      );
      expect(connections).toBe(1);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => {
        slow.close(() => {
          resolve();
        });
      });
    }
  });
});
