import { describe, expect, it } from 'vitest';
import { authenticateBootstrapToken } from './bootstrap-token-authenticator.js';

/*
 * Fidelity audit: a bootstrap token's `expiration` is read with Go's time.Parse(time.RFC3339, ...)
 * (staging/src/k8s.io/cluster-bootstrap/util/secrets/secrets.go GetExpiration, used by HasExpired):
 * a value that does not parse counts as expired, and so does one whose time has come
 * (timeRemaining <= 0). plugin/pkg/auth/authenticator/token/bootstrap/bootstrap.go
 * (*TokenAuthenticator).AuthenticateToken refuses the token when HasExpired. Until a fidelity
 * audit the stand-in read the expiration with JavaScript's Date.parse, which accepts many non-RFC
 * 3339 spellings (a bare date, no time zone, RFC 1123), so a Secret whose expiration a real
 * cluster treats as expired still authenticated (and, in controllers/bootstrap-signer.ts, still
 * signed cluster-info and was not cleaned up).
 */

const encode = (data: Record<string, string>): Record<string, string> =>
  Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')]));

const authenticate = (expiration: string, now = new Date('2030-01-01T00:00:00Z')) =>
  authenticateBootstrapToken(
    'abcdef.0123456789abcdef',
    (namespace, name) =>
      namespace === 'kube-system' && name === 'bootstrap-token-abcdef'
        ? {
            type: 'bootstrap.kubernetes.io/token',
            data: encode({
              'token-id': 'abcdef',
              'token-secret': '0123456789abcdef',
              'usage-bootstrap-authentication': 'true',
              expiration,
            }),
            metadata: {},
          }
        : undefined,
    now,
  );

describe('bootstrap token expiration is RFC 3339 (cluster-bootstrap/util/secrets GetExpiration)', () => {
  it.each([
    ['a bare date', '2099-01-01'],
    ['a date and time without a zone', '2099-01-01T00:00:00'],
    ['an RFC 1123 date', 'Thu, 01 Jan 2099 00:00:00 GMT'],
    ['a space instead of T', '2099-01-01 00:00:00Z'],
  ])('%s (%s) does not parse, so the token counts as expired and is refused', (_what, expiration) => {
    expect(authenticate(expiration).outcome).toBe('rejected');
  });

  it('a token whose expiration is exactly now has expired (timeRemaining <= 0)', () => {
    expect(authenticate('2030-01-01T00:00:00Z', new Date('2030-01-01T00:00:00Z')).outcome).toBe('rejected');
  });

  it('still accepts what the product writes (RFC 3339, whole seconds, Z)', () => {
    expect(authenticate('2099-01-01T00:00:00Z').outcome).toBe('authenticated');
  });
});
