import { createPrivateKey, webcrypto } from 'node:crypto';
import { x509 } from './x509-provider.js';

export interface KubeletCsr {
  /** DER PKCS#10 request: O=system:nodes, CN=system:node:<name>, the given IP and DNS SANs. */
  csrDer: Buffer;
  /** The kubelet's private key, PEM "EC PRIVATE KEY" (SEC1). Secret: written with mode 0600. */
  keyPem: string;
}

/**
 * A fresh ECDSA P-256 kubelet key and its certificate request. The client certificate's request
 * carries no SANs; the serving one's carries the node's IPs and its name as DNS name.
 */
export async function createKubeletCsr(
  nodeName: string,
  ips: readonly string[],
  dnsNames: readonly string[] = [],
): Promise<KubeletCsr> {
  const names = [
    ...dnsNames.map((value) => ({ type: 'dns' as const, value })),
    ...ips.map((value) => ({ type: 'ip' as const, value })),
  ];
  const keys = await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify']);
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: [{ O: ['system:nodes'] }, { CN: [`system:node:${nodeName}`] }],
    keys,
    signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
    extensions: names.length > 0 ? [new x509.SubjectAlternativeNameExtension(names)] : [],
  });
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  const keyPem = createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' })
    .export({ type: 'sec1', format: 'pem' })
    .toString();
  return { csrDer: Buffer.from(csr.rawData), keyPem };
}
