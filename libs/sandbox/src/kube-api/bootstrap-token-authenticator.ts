import { createHash, timingSafeEqual } from 'node:crypto';
import { BOOTSTRAPPERS_GROUP } from './authorization-rules.js';
import type { AuthenticationResult } from './client-certificate-authenticator.js';
import { bootstrapTokenExpired } from './bootstrap-token-expiration.js';

/** A stored Secret, as far as this authenticator reads it. */
export interface SecretLike {
  type?: unknown;
  data?: unknown;
  metadata: { deletionTimestamp?: unknown; [key: string]: unknown };
}

const TOKEN = /^([a-z0-9]{6})\.([a-z0-9]{16})$/;
const EXTRA_GROUP = /^system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]$/;

/**
 * The bootstrap token authenticator (plugin/pkg/auth/authenticator/token/bootstrap/bootstrap.go):
 * a bearer token "<id>.<secret>" is valid when kube-system/bootstrap-token-<id> exists, is not
 * being deleted, has type bootstrap.kubernetes.io/token, the same token-secret and token-id, has
 * not expired, and is marked usage-bootstrap-authentication=true. The user is
 * system:bootstrap:<id>, in system:bootstrappers plus auth-extra-groups (each must be a
 * system:bootstrappers:* name, or the token is refused). A token of another shape is not a
 * bootstrap token ('absent'); one that matches no valid Secret is refused.
 */
export function authenticateBootstrapToken(
  token: string,
  readSecret: (namespace: string, name: string) => SecretLike | undefined,
  now: Date = new Date(),
): AuthenticationResult {
  const parsed = TOKEN.exec(token);
  if (parsed === null) return { outcome: 'absent' };
  const [, id = '', secret = ''] = parsed;
  const stored = readSecret('kube-system', `bootstrap-token-${id}`);
  const refused = (why: string): AuthenticationResult => ({
    outcome: 'rejected',
    why: `bootstrap token ${id}: ${why}`,
  });
  if (stored === undefined) return refused('no such token');
  if (stored.metadata.deletionTimestamp !== undefined) return refused('is deleted and awaiting removal');
  if (stored.type !== 'bootstrap.kubernetes.io/token' || typeof stored.data !== 'object' || stored.data === null)
    return refused('secret has the wrong type');
  const data = stored.data as Record<string, unknown>;
  const field = (key: string): string =>
    typeof data[key] === 'string' ? Buffer.from(data[key], 'base64').toString() : '';
  if (!sameSecret(field('token-secret'), secret)) return refused('token secret does not match');
  if (field('token-id') !== id) return refused('token-id does not match');
  const expiration = field('expiration');
  if (bootstrapTokenExpired(expiration, now.getTime())) return refused('expired');
  if (field('usage-bootstrap-authentication') !== 'true')
    return refused('not marked usage-bootstrap-authentication=true');
  const extra = field('auth-extra-groups');
  const groups = new Set([BOOTSTRAPPERS_GROUP]);
  for (const group of extra === '' ? [] : extra.split(',')) {
    if (!EXTRA_GROUP.test(group)) return refused(`auth-extra-groups has an invalid group "${group}"`);
    groups.add(group);
  }
  return { outcome: 'authenticated', user: { name: `system:bootstrap:${id}`, groups: [...groups].sort() } };
}

/** Constant-time comparison, as bootstrap.go's subtle.ConstantTimeCompare. */
export function sameSecret(a: string, b: string): boolean {
  const digest = (text: string): Buffer => createHash('sha256').update(text).digest();
  return timingSafeEqual(digest(a), digest(b)) && a.length === b.length;
}
