import { generateKeyPair } from 'node:crypto';
import { promisify } from 'node:util';
import { distinguishedName } from './certificate-builder.js';
import { createCertificationRequest } from './certification-request.js';

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
  const key = await promisify(generateKeyPair)('ec', { namedCurve: 'P-256' });
  const csrDer = createCertificationRequest(
    distinguishedName([
      ['O', 'system:nodes'],
      ['CN', `system:node:${nodeName}`],
    ]),
    key,
    { dnsNames, ips },
  );
  return { csrDer, keyPem: key.privateKey.export({ type: 'sec1', format: 'pem' }).toString() };
}
