import { X509Certificate, createHash } from 'node:crypto';

/**
 * kubeadm's CA public-key pin: "sha256:" + hex(SHA-256(DER SubjectPublicKeyInfo)). Pinning the
 * key rather than the certificate keeps joins working when the CA certificate is re-issued for
 * the same key.
 */
export function caPublicKeyPin(caCertificatePem: string | Buffer): string {
  const spki = new X509Certificate(caCertificatePem).publicKey.export({ type: 'spki', format: 'der' });
  return `sha256:${createHash('sha256').update(spki).digest('hex')}`;
}

/** Whether `pin` has the form kubeadm accepts. */
export function isCaPin(pin: string): boolean {
  return /^sha256:[0-9a-f]{64}$/.test(pin);
}
