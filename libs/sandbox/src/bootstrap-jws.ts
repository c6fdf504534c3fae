import { createHmac, timingSafeEqual } from 'node:crypto';

/*
 * Detached JWS signatures of the cluster-info kubeconfig, as k8s.io/cluster-bootstrap/token/jws
 * computes them: HS256 over the content with the token secret (zero-padded to 32 bytes, as
 * go-jose requires) as key, protected header {"alg":"HS256","kid":"<token id>"}, and the
 * payload elided from the compact form ("<header>..<signature>", RFC 7515 appendix F).
 */

const b64url = (data: Buffer | string): string => Buffer.from(data).toString('base64url');

/** jws.ComputeDetachedSignature. */
export function computeDetachedSignature(content: string, tokenId: string, tokenSecret: string): string {
  const secret = Buffer.from(tokenSecret);
  const key = secret.length >= 32 ? secret : Buffer.concat([secret, Buffer.alloc(32 - secret.length)]);
  // go-jose writes the protected header with its keys sorted, as encoding/json does for maps.
  const header = b64url(JSON.stringify({ alg: 'HS256', kid: tokenId }));
  const signature = createHmac('sha256', key)
    .update(`${header}.${b64url(content)}`)
    .digest();
  return `${header}..${b64url(signature)}`;
}

/** jws.DetachedTokenIsValid: the signature equals the one the token would compute. */
export function detachedTokenIsValid(detached: string, content: string, tokenId: string, tokenSecret: string): boolean {
  const expected = Buffer.from(computeDetachedSignature(content, tokenId, tokenSecret));
  const given = Buffer.from(detached);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
