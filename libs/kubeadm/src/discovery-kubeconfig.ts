/** What a joining node knows from its attested join ticket: where the API server is, the CA, its kubelet's credential. */
export interface DiscoveryCredentials {
  /** host:port of the API server (or its load balancer). */
  apiServerEndpoint: string;
  /** The cluster CA's certificate, PEM: the API server is trusted by it and nothing else. */
  caCertificatePem: string;
  /** The kubelet's client certificate (`system:node:<name>`, issued by that CA) and its key, PEM. */
  clientCertificatePem: string;
  clientKeyPem: string;
}

/**
 * The kubeconfig of kubeadm's file discovery (`discovery.file.kubeConfigPath`): the cluster CA and
 * the kubelet's own client certificate, both from the join ticket. kubeadm trusts the API server by
 * that CA, reads what a worker's join reads (kubeadm-config, kubelet-config) as the node, and writes
 * the same credential into bootstrap-kubelet.conf; the kubelet finds its certificate already in its
 * store and posts no CSR. Nothing is written to the cluster for the join: no bootstrap token exists.
 * Holds the kubelet's private key: write it 0600, and remove it once the join is done.
 */
export function discoveryKubeconfig(credentials: DiscoveryCredentials): string {
  const base64 = (pem: string): string => Buffer.from(pem).toString('base64');
  return JSON.stringify(
    {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'kubernetes',
          cluster: {
            server: `https://${credentials.apiServerEndpoint}`,
            'certificate-authority-data': base64(credentials.caCertificatePem),
          },
        },
      ],
      users: [
        {
          name: 'kubelet',
          user: {
            'client-certificate-data': base64(credentials.clientCertificatePem),
            'client-key-data': base64(credentials.clientKeyPem),
          },
        },
      ],
      contexts: [{ name: 'kubelet@kubernetes', context: { cluster: 'kubernetes', user: 'kubelet' } }],
      'current-context': 'kubelet@kubernetes',
    },
    null,
    2,
  );
}
