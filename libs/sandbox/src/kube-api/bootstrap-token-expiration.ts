/** Go's time.RFC3339 as time.Parse reads it: fractional seconds allowed, a zone required. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/**
 * Whether a bootstrap token Secret's `expiration` has passed, as cluster-bootstrap's HasExpired
 * decides (staging/src/k8s.io/cluster-bootstrap/util/secrets/secrets.go): no expiration never
 * expires; one that does not parse as RFC 3339 counts as expired, and so does one whose time has
 * come (time remaining <= 0). Date.parse alone took a bare date or an RFC 1123 date.
 */
export function bootstrapTokenExpired(expiration: string, now: number): boolean {
  if (expiration === '') return false;
  if (!RFC3339.test(expiration)) return true;
  const expires = Date.parse(expiration);
  return Number.isNaN(expires) || expires <= now;
}
