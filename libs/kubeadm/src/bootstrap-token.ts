import { randomInt } from 'node:crypto';
import type { CoreV1Api, V1Secret } from '@kubernetes/client-node';

/** A kubeadm bootstrap token "<id>.<secret>": id [a-z0-9]{6}, secret [a-z0-9]{16}. */
export interface BootstrapToken {
  id: string;
  secret: string;
  /** "<id>.<secret>"; a credential: never log it. */
  token: string;
  expires: Date;
}

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';
export const BOOTSTRAP_TOKEN_PATTERN = /^[a-z0-9]{6}\.[a-z0-9]{16}$/;
export const NODE_BOOTSTRAP_GROUP = 'system:bootstrappers:kubeadm:default-node-token';
/**
 * Marks the token Secrets the JoinService mints for attested nodes; any other bootstrap token is
 * removed after init (deleteUnmintedBootstrapTokens).
 */
export const MINTED_BY_LABEL = 'constellation.dev/minted-by';
export const JOIN_SERVICE_MINTER = 'joinservice';

function randomString(length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += ALPHABET[randomInt(ALPHABET.length)] ?? '';
  return out;
}

/** A fresh token, uniformly random, valid for `ttlMs` from `now`. */
export function generateBootstrapToken(ttlMs: number, now = new Date()): BootstrapToken {
  const id = randomString(6);
  const secret = randomString(16);
  return { id, secret, token: `${id}.${secret}`, expires: new Date(now.getTime() + ttlMs) };
}

/** `bootstrap-token-<id>`: the name kubeadm gives a token's Secret (bootstrapapi.BootstrapTokenSecretPrefix). */
export function bootstrapTokenSecretName(token: Pick<BootstrapToken, 'id'>): string {
  return `bootstrap-token-${token.id}`;
}

/**
 * The Secret kubeadm creates for a bootstrap token (`kube-system/bootstrap-token-<id>`, type
 * `bootstrap.kubernetes.io/token`), usable for authentication and for signing the cluster-info
 * ConfigMap, in kubeadm's default node group.
 */
export function bootstrapTokenSecret(token: BootstrapToken, description: string): V1Secret {
  const data: Record<string, string> = {
    'token-id': token.id,
    'token-secret': token.secret,
    description,
    expiration: token.expires.toISOString().replace(/\.\d{3}Z$/, 'Z'),
    'usage-bootstrap-authentication': 'true',
    'usage-bootstrap-signing': 'true',
    'auth-extra-groups': NODE_BOOTSTRAP_GROUP,
  };
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: bootstrapTokenSecretName(token),
      namespace: 'kube-system',
      labels: { [MINTED_BY_LABEL]: JOIN_SERVICE_MINTER },
    },
    type: 'bootstrap.kubernetes.io/token',
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
  };
}

/**
 * Mints a token and stores its Secret through the API. One Secret per token, created by name:
 * no listing or scanning of existing tokens, so cost does not grow with the cluster.
 */
export async function createBootstrapToken(
  core: CoreV1Api,
  ttlMs: number,
  description: string,
): Promise<BootstrapToken> {
  for (let attempt = 0; ; attempt++) {
    const token = generateBootstrapToken(ttlMs);
    try {
      await core.createNamespacedSecret({ namespace: 'kube-system', body: bootstrapTokenSecret(token, description) });
      return token;
    } catch (err) {
      // A 409 means the random id collided with a live token: draw again (bounded).
      if ((err as { code?: number }).code !== 409 || attempt >= 3) throw err;
    }
  }
}
