import type { CoreV1Api } from '@kubernetes/client-node';
import { JOIN_SERVICE_MINTER, MINTED_BY_LABEL, generateBootstrapToken } from './bootstrap-token.js';

/*
 * kubeadm init always creates a bootstrap token: with no `bootstrapTokens` in the
 * InitConfiguration, SetDefaults_BootstrapTokens (cmd/kubeadm/app/apis/kubeadm/v1beta4/defaults.go)
 * adds one valid for 24 h that signs cluster-info and authenticates in
 * system:bootstrappers:kubeadm:default-node-token: an unattested join credential. An empty list is
 * defaulted the same way, and skipping the bootstrap-token phase would also drop cluster-info and
 * kubeadm's RBAC for TLS bootstrap, so it cannot be configured away.
 *
 * Instead the init configuration names its own token that cannot join: no `signing` usage (the
 * bootstrap signer never signs cluster-info for it, so discovery with it fails) and, instead of
 * kubeadm's node group, a group no RoleBinding names (so it may not post or get approved a CSR).
 * It expires after INIT_TOKEN_TTL, and deleteUnmintedBootstrapTokens removes it (and any other
 * token the JoinService did not mint) right after init.
 */

/** Long enough for kubeadm to write it; the token is useless for joins from the start. */
export const INIT_TOKEN_TTL = '10m0s';
/** A bootstrap group (bootstrapapi.BootstrapGroupPattern) that no RBAC binding grants anything. */
export const INIT_TOKEN_GROUP = 'system:bootstrappers:constellation:init-only';

/** The `bootstrapTokens` entry of the InitConfiguration: a fresh random token that cannot join. */
export function initBootstrapTokens(): Record<string, unknown>[] {
  const { token } = generateBootstrapToken(0);
  return [
    {
      token,
      description: 'kubeadm init token; cannot join (no signing usage, no node group); deleted after init',
      ttl: INIT_TOKEN_TTL,
      usages: ['authentication'],
      groups: [INIT_TOKEN_GROUP],
    },
  ];
}

/**
 * Deletes every bootstrap token Secret in kube-system that the JoinService did not mint (call
 * once, right after `kubeadm init`, with the admin client). Returns the deleted token ids.
 */
export async function deleteUnmintedBootstrapTokens(core: CoreV1Api): Promise<string[]> {
  const secrets = await core.listNamespacedSecret({
    namespace: 'kube-system',
    fieldSelector: 'type=bootstrap.kubernetes.io/token',
  });
  const deleted: string[] = [];
  for (const secret of secrets.items) {
    // The field selector is a hint: a server that ignores it still answers every Secret.
    if (secret.type !== 'bootstrap.kubernetes.io/token') continue;
    if (secret.metadata?.labels?.[MINTED_BY_LABEL] === JOIN_SERVICE_MINTER) continue;
    const name = secret.metadata?.name ?? '';
    try {
      await core.deleteNamespacedSecret({ namespace: 'kube-system', name });
    } catch (err) {
      if ((err as { code?: number }).code !== 404) throw err;
    }
    deleted.push(name.replace(/^bootstrap-token-/, ''));
  }
  return deleted;
}
