import { stringify } from 'yaml';

export interface KubeconfigSpec {
  clusterName: string;
  server: string;
  caPem: string;
  userName: string;
  clientCertPem?: string;
  clientKeyPem?: string;
  token?: string;
}

/** A kubeconfig with one cluster, one user and one current context, as kubeadm writes them. */
export function kubeconfig(spec: KubeconfigSpec): string {
  const b64 = (text: string): string => Buffer.from(text).toString('base64');
  const user: Record<string, string> = {};
  if (spec.clientCertPem !== undefined) user['client-certificate-data'] = b64(spec.clientCertPem);
  if (spec.clientKeyPem !== undefined) user['client-key-data'] = b64(spec.clientKeyPem);
  if (spec.token !== undefined) user['token'] = spec.token;
  const context = `${spec.userName}@${spec.clusterName}`;
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      { name: spec.clusterName, cluster: { server: spec.server, 'certificate-authority-data': b64(spec.caPem) } },
    ],
    users: [{ name: spec.userName, user }],
    contexts: [{ name: context, context: { cluster: spec.clusterName, user: spec.userName } }],
    'current-context': context,
  });
}
