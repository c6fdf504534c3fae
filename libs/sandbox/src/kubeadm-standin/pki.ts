import { X509Certificate, generateKeyPairSync } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pathExists } from '@constellation/files';
import { CertificateAuthority } from '@constellation/keys';
import { PhaseError } from './phase-error.js';

export interface ClusterPkiFiles {
  caCertPem: string;
  apiServerCertPem: string;
  apiServerKeyPem: string;
  adminCertPem: string;
  adminKeyPem: string;
}

async function writeSecret(path: string, content: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, content, { mode: 0o600 });
}

function keyPair(): { publicKey: KeyObject; keyPem: string; pubPem: string } {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return {
    publicKey,
    keyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    pubPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}

/** The certs phase that first signs with each CA, for LoadCertificateAuthority's errors. */
const SIGNING_PHASE: Record<string, string> = {
  ca: 'certs/apiserver',
  'front-proxy-ca': 'certs/front-proxy-client',
  'etcd/ca': 'certs/etcd-server',
};

/**
 * Creates a CA (cert + key) at `<dir>/<name>.{crt,key}` unless it exists, like kubeadm's certs
 * phase; an existing one must be a CA (cmd/kubeadm/app/phases/certs/certs.go LoadCertificateAuthority).
 */
async function ensureCa(dir: string, name: string, commonName: string): Promise<CertificateAuthority> {
  const crt = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  if (!(await pathExists(crt))) {
    const generated = await CertificateAuthority.generate(commonName);
    await mkdir(dirname(crt), { recursive: true });
    await writeFile(crt, generated.certificatePem);
    await writeSecret(key, generated.keyPem);
  }
  const certificatePem = await readFile(crt, 'utf8');
  if (!new X509Certificate(certificatePem).ca)
    throw new PhaseError(SIGNING_PHASE[name] ?? 'certs', `${name} certificate is not a certificate authority`);
  return CertificateAuthority.fromPem(certificatePem, await readFile(key, 'utf8'));
}

/**
 * kubeadm's PKI under `dir`: cluster CA, API server serving certificate, service-account key pair,
 * front-proxy CA, etcd CA, and an admin client certificate. Existing CAs are reused (a joining
 * control plane brings them in its ticket).
 */
export async function ensureClusterPki(
  dir: string,
  apiServerIps: readonly string[],
  apiServerNames: readonly string[],
): Promise<ClusterPkiFiles> {
  const ca = await ensureCa(dir, 'ca', 'kubernetes');
  await ensureCa(dir, 'front-proxy-ca', 'front-proxy-ca');
  await ensureCa(dir, join('etcd', 'ca'), 'etcd-ca');
  if (!(await pathExists(join(dir, 'sa.key')))) {
    const sa = keyPair();
    await writeSecret(join(dir, 'sa.key'), sa.keyPem);
    await writeFile(join(dir, 'sa.pub'), sa.pubPem);
  }
  const server = keyPair();
  const apiServerCertPem = await ca.issueCertificate({
    commonName: 'kube-apiserver',
    publicKey: server.publicKey,
    ips: apiServerIps,
    dnsNames: apiServerNames,
    usage: 'server',
  });
  await writeFile(join(dir, 'apiserver.crt'), apiServerCertPem);
  await writeSecret(join(dir, 'apiserver.key'), server.keyPem);
  const admin = keyPair();
  const adminCertPem = await ca.issueCertificate({
    commonName: 'kubernetes-admin',
    organisations: ['kubeadm:cluster-admins'],
    publicKey: admin.publicKey,
    usage: 'client',
  });
  return {
    caCertPem: ca.certificatePem,
    apiServerCertPem,
    apiServerKeyPem: server.keyPem,
    adminCertPem,
    adminKeyPem: admin.keyPem,
  };
}

export interface ClientCredentialPem {
  certPem: string;
  keyPem: string;
}

/**
 * A client certificate signed by the cluster CA in `dir`, as kubeadm's kubeconfig phase writes
 * into admin.conf (CN kubernetes-admin, O kubeadm:cluster-admins) and, on the first control
 * plane, into kubelet.conf (CN system:node:<name>, O system:nodes).
 */
export async function issueClientCredential(
  dir: string,
  commonName: string,
  organisations: readonly string[],
): Promise<ClientCredentialPem> {
  const ca = CertificateAuthority.fromPem(
    await readFile(join(dir, 'ca.crt'), 'utf8'),
    await readFile(join(dir, 'ca.key'), 'utf8'),
  );
  const pair = keyPair();
  const certPem = await (
    await ca
  ).issueCertificate({ commonName, organisations, publicKey: pair.publicKey, usage: 'client' });
  return { certPem, keyPem: pair.keyPem };
}
