import { X509Certificate, createPrivateKey } from 'node:crypto';
import { mkdir, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathExists } from '@constellation/files';
import { CertificateAuthority, createKubeletCsr } from '@constellation/keys';
import type { NodePaths } from './node-paths.js';
import { writeFileAtomic } from './secure-files.js';

/*
 * The kubelet's two credentials (kubelet-csr-checks.ts in @constellation/keys has the profiles):
 * the client certificate it authenticates to the API server with, and the serving certificate it
 * presents on its own port. Joining nodes get both in their ticket; the first node creates the
 * cluster CA before kubeadm init and signs its own serving certificate, and kubeadm's kubeconfig
 * phase gives it its client credential (kubelet.conf) from the same CA.
 */

/** A certificate and the private key it was issued for, both PEM. */
export interface KubeletCredential {
  certificatePem: string | Uint8Array;
  keyPem: string;
}

/** The kubelet's certificate store names (k8s.io/client-go/util/certificate, fileStore). */
const CLIENT_PAIR_PREFIX = 'kubelet-client';

/**
 * Refuses a certificate that does not belong to the key this node made: such a ticket is treated
 * as no ticket, before the node commits to anything.
 */
export function checkCredential(which: 'client' | 'serving', credential: KubeletCredential): void {
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(credential.certificatePem);
  } catch {
    throw new Error(`the ticket's kubelet ${which} certificate is not a PEM certificate`);
  }
  if (!certificate.checkPrivateKey(createPrivateKey(credential.keyPem)))
    throw new Error(`the ticket's kubelet ${which} certificate is not for this node's kubelet ${which} key`);
}

/**
 * The ticket's cluster CA is a CA, and it issued both kubelet certificates: the node trusts the
 * API server by it alone, so a CA that did not sign the node's own credentials is not the cluster's.
 */
export function checkIssuedBy(caPem: Uint8Array, certificates: { client: Uint8Array; serving: Uint8Array }): void {
  let ca: X509Certificate;
  try {
    ca = new X509Certificate(caPem);
  } catch {
    throw new Error("the ticket's cluster CA is not a PEM certificate");
  }
  if (!ca.ca) throw new Error("the ticket's cluster CA certificate is not a CA certificate");
  for (const [which, pem] of Object.entries(certificates)) {
    const certificate = new X509Certificate(pem);
    if (!certificate.checkIssued(ca) || !certificate.verify(ca.publicKey))
      throw new Error(`the ticket's kubelet ${which} certificate was not issued by the ticket's cluster CA`);
  }
}

/** The serving certificate and key where the KubeletConfiguration's tlsCertFile/tlsPrivateKeyFile point. */
export async function writeServingCredential(paths: NodePaths, credential: KubeletCredential): Promise<void> {
  await writeFileAtomic(paths.kubeletServingCert, credential.certificatePem);
  await writeFileAtomic(paths.kubeletServingKey, credential.keyPem, true);
}

/**
 * The client credential as the kubelet's certificate store keeps it: certificate and key in one
 * kubelet-client-<time>.pem (0600), and kubelet-client-current.pem a symlink to it. A kubelet that
 * finds a valid current pair uses it instead of a TLS bootstrap with the token, and later rotates
 * it itself; a regular file in the symlink's place would make that rotation fail. Returns the
 * path of kubelet-client-current.pem.
 */
export async function writeClientCredential(
  certDir: string,
  credential: KubeletCredential,
  now = new Date(),
): Promise<string> {
  await mkdir(certDir, { recursive: true, mode: 0o755 });
  // The store's time format, "2006-01-02-15-04-05".
  const stamp = now.toISOString().slice(0, 19).replace(/[T:]/g, '-');
  const pairName = `${CLIENT_PAIR_PREFIX}-${stamp}.pem`;
  const certificatePem = Buffer.from(credential.certificatePem).toString();
  await writeFileAtomic(join(certDir, pairName), `${certificatePem.trimEnd()}\n${credential.keyPem}`, true);
  // Like the store's updateSymlink: a fresh "updated" link renamed over "current".
  const updated = join(certDir, `${CLIENT_PAIR_PREFIX}-updated.pem`);
  const current = join(certDir, `${CLIENT_PAIR_PREFIX}-current.pem`);
  await rm(updated, { force: true });
  await symlink(pairName, updated);
  await rename(updated, current);
  return current;
}

/**
 * The cluster CA at `<pki>/ca.{crt,key}`: created here on the first node, before kubeadm init,
 * whose certs phase then uses it as it is ("Using existing ca certificate authority"). An
 * existing pair is loaded; half a pair is an error, never overwritten.
 */
async function clusterCa(pkiDir: string): Promise<CertificateAuthority> {
  const crt = join(pkiDir, 'ca.crt');
  const key = join(pkiDir, 'ca.key');
  const [hasCrt, hasKey] = await Promise.all([pathExists(crt), pathExists(key)]);
  if (hasCrt !== hasKey)
    throw new Error(`the cluster CA in ${pkiDir} is incomplete: ${hasCrt ? 'ca.key' : 'ca.crt'} is missing`);
  if (hasCrt) return CertificateAuthority.fromPem(await readFile(crt, 'utf8'), await readFile(key, 'utf8'));
  const generated = await CertificateAuthority.generate('kubernetes');
  await mkdir(pkiDir, { recursive: true, mode: 0o755 });
  await writeFile(key, generated.keyPem, { mode: 0o600, flag: 'wx' });
  await writeFile(crt, generated.certificatePem, { mode: 0o644, flag: 'wx' });
  return generated.ca;
}

/**
 * The first node's serving certificate, before kubeadm init starts the kubelet: the same profile
 * and the same CA check a joining node's serving certificate gets from the JoinService.
 */
export async function issueFirstNodeServingCredential(
  paths: NodePaths,
  self: { name: string; ip: string },
): Promise<void> {
  const ca = await clusterCa(paths.kubernetesPki);
  const request = await createKubeletCsr(self.name, [self.ip], [self.name]);
  const issued = await ca.issueKubeletServingCertificate(request.csrDer, { name: self.name, ips: [self.ip] });
  await writeServingCredential(paths, { certificatePem: issued.certificatePem, keyPem: request.keyPem });
}
