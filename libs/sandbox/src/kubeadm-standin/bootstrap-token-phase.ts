import type { ResolvedBootstrapToken } from './config-defaults.js';
import type { Credential } from './https-json.js';
import { httpsJson } from './https-json.js';

/*
 * kubeadm init's bootstrap-token phase (cmd/kubeadm/app/phases/bootstraptoken/node/token.go
 * UpdateOrCreateTokens, bootstraptoken/v1 BootstrapTokenToSecret): one Secret
 * kube-system/bootstrap-token-<id> per configured (or defaulted) token, and the cluster-info
 * ConfigMap in kube-public (clusterinfo.go CreateBootstrapConfigMapIfNotExists) that the
 * bootstrap signer signs for every signing token.
 */

/** The Secret BootstrapTokenToSecret writes. */
export function tokenSecret(token: ResolvedBootstrapToken): Record<string, unknown> {
  const data: Record<string, string> = { 'token-id': token.id, 'token-secret': token.secret };
  if (token.description !== '') data['description'] = token.description;
  if (token.expires !== undefined) data['expiration'] = token.expires.toISOString().replace(/\.\d{3}Z$/, 'Z');
  for (const usage of token.usages) data[`usage-bootstrap-${usage}`] = 'true';
  if (token.groups.length > 0) data['auth-extra-groups'] = token.groups.join(',');
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: `bootstrap-token-${token.id}`, namespace: 'kube-system' },
    type: 'bootstrap.kubernetes.io/token',
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
  };
}

async function create(server: string, caPem: string, admin: Credential, path: string, body: unknown): Promise<void> {
  const res = await httpsJson(`${server}${path}`, { method: 'POST', ca: caPem, credential: admin, body });
  if (res.status !== 201 && res.status !== 409) {
    const message = (res.body as { message?: unknown } | undefined)?.message;
    throw new Error(`POST ${path}: status ${res.status}${typeof message === 'string' ? `: ${message}` : ''}`);
  }
}

export async function createBootstrapTokens(
  server: string,
  caPem: string,
  admin: Credential,
  tokens: readonly ResolvedBootstrapToken[],
): Promise<void> {
  for (const token of tokens)
    await create(server, caPem, admin, '/api/v1/namespaces/kube-system/secrets', tokenSecret(token));
}

export async function createClusterInfo(
  server: string,
  caPem: string,
  admin: Credential,
  kubeconfig: string,
): Promise<void> {
  await create(server, caPem, admin, '/api/v1/namespaces/kube-public/configmaps', {
    metadata: { name: 'cluster-info', namespace: 'kube-public' },
    data: { kubeconfig },
  });
}
