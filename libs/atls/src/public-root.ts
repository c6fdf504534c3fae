import { createECDH, createHash, createPrivateKey, createPublicKey } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { certificateToPem, createCertificate } from './certificate.js';
import type { CertificateExtension } from './certificate.js';

/**
 * The aTLS public root.
 *
 * Why it exists: Node's TLS client only calls `checkServerIdentity` (where the attestation is
 * checked) after the certificate chain verified. For a self-signed certificate verification
 * fails first, and with `rejectUnauthorized: false` grpc-js then accepts the connection without
 * ever calling the check, so an unattested server would be trusted. Every per-connection aTLS
 * certificate is therefore issued by this root and clients trust only this root, so chain
 * verification succeeds and the attestation check always runs.
 *
 * Why its key is public: the root vouches for nothing. Anyone can derive it (it comes from a
 * fixed label) and sign certificates with it; what makes a server trusted is the attestation in
 * the certificate, bound to the certificate's own key and to the client's fresh nonce.
 */
const ROOT_LABEL = 'constellation/atls/public-root/v1';
export const ATLS_ROOT_NAME = 'constellation aTLS public root (not a trust anchor)';

export interface PublicRoot {
  privateKey: KeyObject;
  publicKey: KeyObject;
  certificatePem: string;
}

let cached: PublicRoot | undefined;

/** The public root's key (derived from a fixed label) and a self-signed certificate for it. */
export function atlsPublicRoot(): PublicRoot {
  if (cached !== undefined) return cached;
  const d = createHash('sha256').update(ROOT_LABEL).digest();
  const ecdh = createECDH('prime256v1');
  ecdh.setPrivateKey(d);
  const point = ecdh.getPublicKey(); // 0x04 || x || y
  const jwk = {
    kty: 'EC',
    crv: 'P-256',
    d: d.toString('base64url'),
    x: point.subarray(1, 33).toString('base64url'),
    y: point.subarray(33).toString('base64url'),
  };
  const privateKey = createPrivateKey({ key: jwk, format: 'jwk' });
  const publicKey = createPublicKey(privateKey);
  const der = createCertificate({
    subjectKey: publicKey,
    subjectName: ATLS_ROOT_NAME,
    signerKey: privateKey,
    issuerName: ATLS_ROOT_NAME,
    isCa: true,
  });
  cached = { privateKey, publicKey, certificatePem: certificateToPem(der) };
  return cached;
}

/** A leaf certificate (PEM) for `subjectKey`, issued by the public root so clients' chain checks pass. */
export function issueFromPublicRoot(
  subjectKey: KeyObject,
  subjectName: string,
  extensions?: CertificateExtension[],
): string {
  const root = atlsPublicRoot();
  return certificateToPem(
    createCertificate({
      subjectKey,
      subjectName,
      signerKey: root.privateKey,
      issuerName: ATLS_ROOT_NAME,
      ...(extensions === undefined ? {} : { extensions }),
    }),
  );
}
