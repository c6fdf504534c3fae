import { waitFor } from '@constellation/testing';
import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBootstrapToken } from './bootstrap-token.js';
import { INIT_TOKEN_GROUP, deleteUnmintedBootstrapTokens } from './init-bootstrap-token.js';
import { startIsolatedCluster } from './isolated-cluster.fixture.js';
import type { IsolatedCluster } from './isolated-cluster.fixture.js';

// A control plane of this file's own, as real kubeadm init leaves it with the init configuration
// libs/kubeadm generates (its bootstrap-token phase): deleteUnmintedBootstrapTokens deletes every
// token in kube-system that the JoinService did not mint.

let cluster: IsolatedCluster;
let core: k8s.CoreV1Api;

beforeAll(async () => {
  cluster = await startIsolatedCluster();
  core = cluster.admin.makeApiClient(k8s.CoreV1Api);
}, 120_000);

afterAll(async () => {
  await cluster.stop();
}, 60_000);

const tokenSecrets = async (): Promise<k8s.V1Secret[]> =>
  (await core.listNamespacedSecret({ namespace: 'kube-system' })).items.filter(
    (s) => s.type === 'bootstrap.kubernetes.io/token',
  );

const clusterInfoSignatures = async (): Promise<string[]> =>
  Object.keys((await core.readNamespacedConfigMap({ namespace: 'kube-public', name: 'cluster-info' })).data ?? {})
    .filter((key) => key.startsWith('jws-kubeconfig-'))
    .map((key) => key.slice('jws-kubeconfig-'.length));

describe('the bootstrap token kubeadm init creates', () => {
  it('cannot join (the bootstrap signer never signs cluster-info for it) and is deleted after init; minted tokens stay', async () => {
    // What kubeadm init created: the init-only token, neither signing nor in the node group.
    const created = await tokenSecrets();
    expect(created).toHaveLength(1);
    const data = (key: string): string => Buffer.from(created[0]?.data?.[key] ?? '', 'base64').toString();
    const initTokenId = data('token-id');
    expect(data('usage-bootstrap-authentication')).toBe('true');
    expect(data('usage-bootstrap-signing')).toBe('');
    expect(data('auth-extra-groups')).toBe(INIT_TOKEN_GROUP);
    expect(new Date(data('expiration')).getTime() - Date.now()).toBeLessThanOrEqual(10 * 60_000);

    // Once kube-controller-manager's bootstrap signer has signed cluster-info for a minted token,
    // it has had its chance to sign for the init token too, and did not: discovery with it fails.
    const minted = await createBootstrapToken(core, 15 * 60_000, 'attested join');
    await waitFor(async () => (await clusterInfoSignatures()).includes(minted.id), {
      timeoutMs: 30_000,
      intervalMs: 250,
      description: "the bootstrap signer's signature of cluster-info for the minted token",
    });
    expect(await clusterInfoSignatures()).toEqual([minted.id]);

    expect(await deleteUnmintedBootstrapTokens(core)).toEqual([initTokenId]);
    expect((await tokenSecrets()).map((s) => s.metadata?.name)).toEqual([`bootstrap-token-${minted.id}`]);
    expect(await deleteUnmintedBootstrapTokens(core)).toEqual([]);
    expect((await tokenSecrets()).map((s) => s.metadata?.name)).toEqual([`bootstrap-token-${minted.id}`]);
  });
});
