import { X509Certificate, createPrivateKey } from 'node:crypto';
import { mkdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { KubeletClientCredential } from './kubelet-tls-bootstrap.js';

/*
 * The kubelet's client certificate store (k8s.io/client-go/util/certificate fileStore, in the
 * kubelet's --cert-dir, /var/lib/kubelet/pki): kubelet-client-current.pem, a symlink to
 * kubelet-client-<time>.pem holding certificate and key. A kubelet that finds a valid current
 * pair there uses it and skips the TLS bootstrap (pkg/kubelet/certificate/bootstrap LoadClientCert).
 */

export function kubeletCertDir(root: string): string {
  return join(root, 'var', 'lib', 'kubelet', 'pki');
}

/** The current pair, when it is valid now, chains to `caPem` and is the node's identity. */
export async function currentClientCredential(
  root: string,
  caPem: string,
  nodeName: string,
  now = new Date(),
): Promise<KubeletClientCredential | undefined> {
  let pem: string;
  try {
    pem = await readFile(join(kubeletCertDir(root), 'kubelet-client-current.pem'), 'utf8');
  } catch {
    return undefined;
  }
  const certPem = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/.exec(pem)?.[0];
  const keyPem = /-----BEGIN (EC |RSA )?PRIVATE KEY-----[\s\S]+?-----END (EC |RSA )?PRIVATE KEY-----/.exec(pem)?.[0];
  if (certPem === undefined || keyPem === undefined) return undefined;
  try {
    const cert = new X509Certificate(certPem);
    const valid =
      cert.checkIssued(new X509Certificate(caPem)) &&
      cert.verify(new X509Certificate(caPem).publicKey) &&
      new Date(cert.validFrom) <= now &&
      now < new Date(cert.validTo) &&
      cert.subject.split('\n').includes(`CN=system:node:${nodeName}`) &&
      cert.checkPrivateKey(createPrivateKey(keyPem));
    return valid ? { certPem: `${certPem}\n`, keyPem: `${keyPem}\n` } : undefined;
  } catch {
    return undefined;
  }
}

/** Stores a pair as the kubelet does after its TLS bootstrap. */
export async function storeClientCredential(
  root: string,
  credential: KubeletClientCredential,
  now = new Date(),
): Promise<void> {
  const dir = kubeletCertDir(root);
  await mkdir(dir, { recursive: true });
  const name = `kubelet-client-${now.toISOString().slice(0, 19).replace(/[T:]/g, '-')}.pem`;
  await writeFile(join(dir, name), `${credential.certPem}${credential.keyPem}`, { mode: 0o600 });
  await rm(join(dir, 'kubelet-client-current.pem'), { force: true });
  await symlink(name, join(dir, 'kubelet-client-current.pem'));
}
