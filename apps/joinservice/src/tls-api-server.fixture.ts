// Test fixture: the API server stand-in over HTTPS, as @kubernetes/client-node insists on TLS.
import { generateKeyPairSync } from 'node:crypto';
import { CertificateAuthority } from '@constellation/keys';
import { KubeApiServer } from '@constellation/sandbox';

/** Starts the stand-in with a server certificate for 127.0.0.1 from a fresh cluster CA. */
export async function startTlsApiServer(
  options: Omit<NonNullable<Parameters<typeof KubeApiServer.start>[0]>, 'tls'> = {},
): Promise<{ api: KubeApiServer; caPem: string }> {
  const { ca, certificatePem } = await CertificateAuthority.generate('kubernetes');
  const key = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const cert = await ca.issueCertificate({
    commonName: 'kube-apiserver',
    publicKey: key.publicKey,
    ips: ['127.0.0.1'],
    usage: 'server',
  });
  const api = await KubeApiServer.start({
    ...options,
    tls: { cert, key: key.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() },
  });
  return { api, caPem: certificatePem };
}
