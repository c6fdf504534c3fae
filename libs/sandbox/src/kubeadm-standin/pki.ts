import { generateKeyPairSync } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CertificateAuthority } from '@constellation/keys';

export interface ClientCredentialPem {
  certPem: string;
  keyPem: string;
}

/**
 * A client certificate signed by the cluster CA in `dir`, as kubeadm's kubeconfig phase writes
 * into admin.conf (CN kubernetes-admin, O kubeadm:cluster-admins): what a joining control plane
 * gets from the shared CA its ticket brought.
 */
export async function issueClientCredential(
  dir: string,
  commonName: string,
  organisations: readonly string[],
): Promise<ClientCredentialPem> {
  const ca = await CertificateAuthority.fromPem(
    await readFile(join(dir, 'ca.crt'), 'utf8'),
    await readFile(join(dir, 'ca.key'), 'utf8'),
  );
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const certPem = await ca.issueCertificate({ commonName, organisations, publicKey, usage: 'client' });
  return { certPem, keyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() };
}
