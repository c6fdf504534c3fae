import { randomBytes } from 'node:crypto';
import { pemBlock } from '@constellation/der';
import { createKubeletCsr } from '@constellation/keys';
import type { Credential } from './https-json.js';
import { httpsJson } from './https-json.js';

/*
 * The kubelet's TLS bootstrap, which kubeadm join starts and waits for (kubelet-start phase):
 * a fresh key, a CertificateSigningRequest for signer kubernetes.io/kube-apiserver-client-kubelet
 * (CN system:node:<name>, O system:nodes, no SANs) posted with the bootstrap token, then waiting
 * until kube-controller-manager has approved and signed it
 * (pkg/kubelet/certificate/bootstrap/bootstrap.go, k8s.io/client-go/util/certificate/csr).
 */

export class TlsBootstrapError extends Error {
  override readonly name = 'TlsBootstrapError';
}

export interface KubeletClientCredential {
  certPem: string;
  keyPem: string;
}

const CSR_PATH = '/apis/certificates.k8s.io/v1/certificatesigningrequests';

export async function tlsBootstrap(
  server: string,
  caPem: string,
  nodeName: string,
  token: string,
  timeoutMs: number,
): Promise<KubeletClientCredential> {
  const { csrDer, keyPem } = await createKubeletCsr(nodeName, []);
  // pem.EncodeToMemory: 64-column lines, no empty line (a body that fills its last line ended in
  // one before, which Go's pem.Decode ignores but not every PEM reader does).
  const request = `${pemBlock('CERTIFICATE REQUEST', csrDer)}\n`;
  const name = `node-csr-${randomBytes(8).toString('hex')}`;
  const credential: Credential = { token };
  const created = await httpsJson(`${server}${CSR_PATH}`, {
    method: 'POST',
    ca: caPem,
    credential,
    body: {
      apiVersion: 'certificates.k8s.io/v1',
      kind: 'CertificateSigningRequest',
      metadata: { name },
      spec: {
        request: Buffer.from(request).toString('base64'),
        signerName: 'kubernetes.io/kube-apiserver-client-kubelet',
        // An ECDSA key: no key encipherment (certificate.DefaultKubeletClientUsages for non-RSA keys).
        usages: ['digital signature', 'client auth'],
      },
    },
  });
  if (created.status !== 201)
    throw new TlsBootstrapError(`cannot create certificate signing request: ${describe(created.status, created.body)}`);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await httpsJson(`${server}${CSR_PATH}/${name}`, { ca: caPem, credential });
    const status = (
      res.body as { status?: { certificate?: string; conditions?: { type: string; message?: string }[] } }
    ).status;
    const denied = status?.conditions?.find((c) => c.type === 'Denied' || c.type === 'Failed');
    if (denied !== undefined)
      throw new TlsBootstrapError(
        `certificate signing request ${name} is ${denied.type.toLowerCase()}: ${denied.message ?? ''}`,
      );
    if (res.status === 200 && status?.certificate !== undefined && status.certificate !== '')
      return { certPem: Buffer.from(status.certificate, 'base64').toString(), keyPem };
    if (Date.now() >= deadline)
      throw new TlsBootstrapError(
        `timed out waiting for the certificate signing request ${name} to be approved and signed`,
      );
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function describe(status: number, body: unknown): string {
  const message = (body as { message?: unknown } | undefined)?.message;
  return `status ${status}${typeof message === 'string' ? `: ${message}` : ''}`;
}
